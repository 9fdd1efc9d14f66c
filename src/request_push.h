/*-------------------------------------------------------------------------
 *
 * request_push.h
 *	  Parsing and validation of a push batch (the "batch" argument of
 *	  kizunasync.push) into C structs.
 *
 *	  Plain C: no postgres.h, so the parser builds and runs outside the
 *	  backend (fuzz/fuzz_push_request.c).  Every allocation goes through the
 *	  caller's allocator; nothing here longjmps.  Errors come back as
 *	  (SQLSTATE, message, detail) for the backend to raise.
 *
 *	  jansson validates the structure only.  Column values, preconditions
 *	  and transform operands are read by the backend from the original jsonb,
 *	  so numeric values stay exact (jansson holds numbers as doubles).
 *
 *	  The limits are documented in decisions/0031-push-request-limits.md.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_REQUEST_PUSH_H
#define KZ_REQUEST_PUSH_H

#include <stdbool.h>
#include <stddef.h>

#include "request_error.h"

/* Documented limits of a push request. */
#define KZ_PUSH_MAX_BODY_BYTES		(16 * 1024 * 1024)	/* batch text */
#define KZ_PUSH_HARD_MAX_MUTATIONS	1000	/* whatever settings say */
#define KZ_PUSH_MAX_NAME_BYTES		63		/* table and column names */
#define KZ_PUSH_MAX_PK_BYTES		1024
#define KZ_PUSH_MAX_HLC_BYTES		128
#define KZ_PUSH_MAX_COLUMNS			1600	/* columns or precondition entries */
#define KZ_PUSH_MAX_TRANSFORMS		1600
#define KZ_PUSH_MAX_STRING_BYTES	(1024 * 1024)	/* any string value */
#define KZ_PUSH_MAX_ARRAY_ITEMS		10000	/* any array inside a value */
#define KZ_PUSH_MAX_TRANSFORM_VALUES 1000	/* values of one array transform */
#define KZ_PUSH_MAX_DEPTH			32		/* nesting inside one column value */

typedef enum KzOp
{
	KZ_OP_INSERT,
	KZ_OP_UPDATE,
	KZ_OP_DELETE
} KzOp;

typedef enum KzTransformOp
{
	KZ_TF_INCREMENT,
	KZ_TF_ARRAY_UNION,
	KZ_TF_ARRAY_REMOVE
} KzTransformOp;

typedef struct KzTransformReq
{
	const char *column;
	KzTransformOp op;
	int			nvalues;		/* arrayUnion/arrayRemove: number of values */
} KzTransformReq;

typedef struct KzMutationReq
{
	char		mutation_id[37];	/* canonical lowercase text */
	const char *table;
	const char *pk;
	KzOp		op;
	int			ncolumns;		/* keys of "columns" in document order */
	const char **columns;
	bool		has_precondition;	/* key present and not JSON null */
	int			nprecond;
	const char **precond_columns;
	int			ntransforms;	/* document order */
	KzTransformReq *transforms;
	const char *hlc;			/* NULL when absent or JSON null */
} KzMutationReq;

typedef struct KzPushReq
{
	bool		atomic;
	int			nmutations;
	KzMutationReq *mutations;
	/* distinct table names, first-appearance order (for the schema gate) */
	int			ntables;
	const char **tables;
	void	   *root;			/* jansson document, internal */
} KzPushReq;

typedef void *(*KzAllocFn) (void *arg, size_t size);

/*
 * Stage 1: parse the batch text and read the envelope: an object with
 * optional "atomic" (JSON boolean) and "mutations" (JSON array), no other
 * keys.  Fills req->atomic, req->nmutations, req->tables (table members that
 * are strings).  Returns false with *err set on failure.
 */
extern bool kz_push_parse(const char *text, size_t len, KzAllocFn alloc, void *alloc_arg,
						  KzPushReq *req, KzReqError *err);

/*
 * Stage 2: validate every mutation (in request order, the first failure
 * wins) and fill req->mutations.  Call only after checking nmutations
 * against the batch limit.
 */
extern bool kz_push_validate(KzPushReq *req, KzAllocFn alloc, void *alloc_arg,
							 KzReqError *err);

/* Release the jansson document (the structs stay valid only until then). */
extern void kz_push_release(KzPushReq *req);

extern const char *kz_op_name(KzOp op);
extern const char *kz_transform_op_name(KzTransformOp op);

/* true when s is a uuid in 8-4-4-4-12 hex form (any case); out = lowercase */
extern bool kz_uuid_text_canonical(const char *s, char out[37]);

#endif							/* KZ_REQUEST_PUSH_H */
