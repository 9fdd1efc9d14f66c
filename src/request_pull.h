/*-------------------------------------------------------------------------
 *
 * request_pull.h
 *	  Parsing and validation of the "buckets" argument of kizunasync.pull.
 *
 *	  Plain C (no postgres.h): the same code runs inside the backend and in
 *	  the libFuzzer target fuzz/fuzz_pull_request.c.  The backend hands over
 *	  the jsonb argument as text; the parser checks the documented limits
 *	  before any work whose size they bound, then returns C structs.  Errors
 *	  come back as (SQLSTATE, message, detail) for the caller to raise.
 *
 *	  Limits (decisions/0022-pull-request-limits.md):
 *	    bucket entries         max_buckets (the max_pull_buckets setting)
 *	    text length            kz_pull_max_text(max_buckets) bytes
 *	    nesting depth          KZ_PULL_MAX_DEPTH     (array > entry > params)
 *	    params per entry       KZ_PULL_MAX_PARAMS
 *	    table / param names    KZ_PULL_MAX_NAME      bytes (PostgreSQL's NAMEDATALEN - 1)
 *	    string param values    KZ_PULL_MAX_VALUE     bytes
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_REQUEST_PULL_H
#define KZ_REQUEST_PULL_H

#include <stddef.h>

#include "request_error.h"

/*
 * The text may hold KZ_PULL_TEXT_PER_BUCKET bytes per bucket entry the
 * request may name, and never less than KZ_PULL_MIN_TEXT: 262,144 bytes
 * for 64 entries, the reference pack's count.
 */
#define KZ_PULL_MIN_TEXT		262144
#define KZ_PULL_TEXT_PER_BUCKET	4096
#define KZ_PULL_MAX_DEPTH		3
#define KZ_PULL_MAX_BUCKETS_LIMIT 10000	/* the setting's upper bound (sql/src/00_schema.sql) */
#define KZ_PULL_MAX_PARAMS		16
#define KZ_PULL_MAX_NAME		63
#define KZ_PULL_MAX_VALUE		1024

/*
 * The messages (errmsg, errdetail) of the errors both parsers give: this one
 * on the text (request_pull.c) and the backend's on the jsonb
 * (request_pull_jsonb.c) answer the same request with the same error.
 */
#define KZ_PULL_M_TOO_LARGE "buckets is too large"
#define KZ_PULL_D_TOO_LARGE "The buckets argument is more than %zu bytes of JSON text (%d bytes for each of the %d bucket entries a pull may name)."
#define KZ_PULL_D_ENTRY_KEYS "A bucket entry has the keys \"table\" and \"params\" only."
#define KZ_PULL_M_UNKNOWN_KEY "buckets[%d] has an unknown key %s"
#define KZ_PULL_D_TABLE_STRING "A bucket entry names its table as a JSON string."
#define KZ_PULL_M_NO_TABLE "buckets[%d] must name a table"
#define KZ_PULL_D_TABLE_NAME "A table name is 1 to 63 bytes."
#define KZ_PULL_M_TABLE_NAME "buckets[%d]: invalid table name"
#define KZ_PULL_D_PARAMS_OBJECT "params is a JSON object mapping column names to values."
#define KZ_PULL_M_PARAMS_OBJECT "buckets[%d]: params must be a JSON object"
#define KZ_PULL_D_ARRAY "buckets is an array of {\"table\": ..., \"params\": {...}}."
#define KZ_PULL_M_ARRAY "buckets must be a JSON array"
#define KZ_PULL_D_TOO_MANY "The request names %zu. The maximum is the max_pull_buckets setting (kizunasync.configure())."
#define KZ_PULL_M_TOO_MANY "a pull names at most %d bucket entries"
#define KZ_PULL_D_ENTRY "A bucket entry is {\"table\": <name>, \"params\": {<column>: <value>, ...}}."
#define KZ_PULL_M_ENTRY_OBJECT "buckets[%d] must be a JSON object"
#define KZ_PULL_D_PARAMS_COUNT "A bucket entry narrows its table by at most 16 column values."
#define KZ_PULL_M_PARAMS_COUNT "buckets[%d] has %zu params, the limit is %d"
#define KZ_PULL_D_PARAM_NAME "A param name is a column name of 1 to 63 bytes."
#define KZ_PULL_M_PARAM_NAME "buckets[%d]: invalid param name %s"
#define KZ_PULL_D_VALUE_LONG "A string param value is at most 1024 bytes."
#define KZ_PULL_M_VALUE_LONG "buckets[%d]: the value of param %s is too long"
#define KZ_PULL_D_VALUE_TYPE "A param value is a string, an integer, true, false or null."
#define KZ_PULL_M_VALUE_TYPE "buckets[%d]: param %s has an unsupported value type"
#define KZ_PULL_D_DEPTH "buckets is an array of {\"table\": ..., \"params\": {...}} with scalar param values."
#define KZ_PULL_M_DEPTH "buckets is nested too deeply"
#define KZ_PULL_D_RANGE "An integer param value lies between -9223372036854775808 and 9223372036854775807."
#define KZ_PULL_M_RANGE "a number in buckets is out of range"

typedef enum KzPullParamKind
{
	KZ_PARAM_NULL,
	KZ_PARAM_STRING,
	KZ_PARAM_INTEGER,
	KZ_PARAM_BOOL
} KzPullParamKind;

typedef struct KzPullParam
{
	char	   *name;			/* column name, NUL-terminated */
	KzPullParamKind kind;
	char	   *text;			/* string value, decimal integer, "true"/"false"; NULL for null */
} KzPullParam;

typedef struct KzPullBucket
{
	char	   *table;			/* wire table name */
	int			nparams;
	KzPullParam *params;		/* in the order the keys appear */
} KzPullBucket;

typedef struct KzPullRequest
{
	int			nbuckets;
	KzPullBucket *buckets;
} KzPullRequest;

/* Allocator used for the output structs (palloc in the backend, malloc in the fuzzer). */
typedef void *(*KzAllocFn) (size_t size);

/* The longest text a request naming at most max_buckets entries may be. */
extern size_t kz_pull_max_text(int max_buckets);

/*
 * Parse text[0 .. len-1] (the JSON text of the buckets argument), which
 * may name at most max_buckets (1 .. KZ_PULL_MAX_BUCKETS_LIMIT) entries.
 * Returns 0 and fills *out on success; returns -1 and fills *err otherwise
 * (*out is then empty, and whatever was allocated may be released by the
 * caller's allocator context).  The output strings are allocated with
 * alloc_fn; jansson's own allocations are released before returning.
 */
extern int	kz_pull_request_parse(const char *text, size_t len, int max_buckets,
								  KzAllocFn alloc_fn, KzPullRequest *out, KzReqError *err);

#endif							/* KZ_REQUEST_PULL_H */
