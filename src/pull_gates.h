/*-------------------------------------------------------------------------
 *
 * pull_gates.h
 *	  The request gates of kizunasync.pull (SPEC 4.3, in order): the named
 *	  tables are synced and their params are columns (22023), the schema
 *	  version gate (RESET_REQUIRED), the bucket column is named (KZL01),
 *	  key and bucket columns are readable (KZL02); then the bucket params
 *	  are cast through their column types and matched against rows.
 *	  Implemented in src/pull_gates.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_PULL_GATES_H
#define KZ_PULL_GATES_H

#include "fmgr.h"
#include "utils/jsonb.h"

#include "request_pull.h"
#include "tabledesc.h"

/* One param of a bucket entry, cast through its column type. */
typedef struct KzScopeParam
{
	char	   *name;
	Jsonb	   *value;			/* to_jsonb of the cast value; JSON null for null */
	bool		scalar;			/* value is a scalar, held in sv */
	JsonbValue	sv;
	bool		isnull;			/* the cast value, typed as its column */
	Datum		datum;
} KzScopeParam;

/* One bucket entry of the request: a table and its params. */
typedef struct KzScope
{
	KzTableDesc *table;
	int			nparams;
	KzScopeParam *params;
} KzScope;

typedef struct KzPullTables
{
	int			ntables;		/* distinct tables, by wire name */
	KzTableDesc **tables;
	int			nscopes;		/* as many as the request's bucket entries */
	KzScope    *scopes;
} KzPullTables;

/* Gates 5 and 6: every table synced, every param a column of its table. */
/*
 * The buckets argument of pull (argument 0 of fcinfo), parsed into req;
 * 22023 when it is malformed, too large or names more than max_buckets
 * entries (the max_pull_buckets setting).
 */
extern void kz_pull_parse_buckets(FunctionCallInfo fcinfo, int max_buckets, KzPullRequest *req);

extern void kz_pull_resolve(const KzPullRequest *req, Oid role, KzPullTables *out);

/*
 * Gate 7's minimum schema version: over the named tables, or over every
 * synced table when none is named; false when no table is synced.
 * *register_any tells whether a named table registers clients.
 */
extern bool kz_pull_min_schema_version(const KzPullTables *pt, int *minver, bool *register_any);

/* Gates 8 (KZL01) and 9 (KZL02). */
extern void kz_pull_check_scopes(const KzPullRequest *req, const KzPullTables *pt, Oid role);

/* Step 11: cast every param through its column type (as the current user). */
extern void kz_pull_cast_params(const KzPullRequest *req, KzPullTables *pt);

/*
 * Does a rendered row match a scope?  Every param names a key of the row
 * whose value equals the param's (jsonb equality; null equals null).  A
 * column the caller may not read is absent from the row and never matches.
 */
extern bool kz_scope_matches(const KzScope *scope, Jsonb *row);

#endif							/* KZ_PULL_GATES_H */
