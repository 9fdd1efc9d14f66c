/*-------------------------------------------------------------------------
 *
 * push_internal.h
 *	  Declarations shared by the push source files (push.c, push_apply.c,
 *	  transforms.c, ledger.c).  Not a public header.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_PUSH_INTERNAL_H
#define KZ_PUSH_INTERNAL_H

#include "postgres.h"

#include "utils/jsonb.h"
#include "utils/uuid.h"

#include "request_push.h"
#include "tableconf.h"

/* Rejection reasons (the closed set of the protocol). */
#define KZ_R_COLUMN_DENIED	"COLUMN_DENIED"
#define KZ_R_CONSTRAINT		"CONSTRAINT"
#define KZ_R_DELETE_WINS	"DELETE_WINS"
#define KZ_R_PRECONDITION	"PRECONDITION"
#define KZ_R_RLS_DENIED		"RLS_DENIED"
#define KZ_R_SUPERSEDED		"SUPERSEDED"

/* One column of a synced table, as push needs it. */
typedef struct KzColumn
{
	char	   *name;
	AttrNumber	attnum;
	Oid			typid;			/* declared type */
	Oid			basetype;		/* domains resolved */
	char	   *typname_sql;	/* format_type of the declared type */
	bool		generated;		/* attgenerated != '' */
	bool		is_key;
	bool		can_select;		/* caller's privileges */
	bool		can_insert;
	bool		can_update;
} KzColumn;

/* Per-call cache entry for one table. */
typedef struct KzPushTable
{
	KzTableConf *conf;
	char	   *qname;			/* quoted qualified name */
	int			ncols;
	KzColumn   *cols;
	bool		can_delete;
	bool		can_update_any; /* UPDATE on the table or some column */
	char	   *projection;		/* readable columns, quoted, comma separated; NULL: none */
	bool		keys_readable;
	char	   *key_pred;		/* "t.k1 = $<base+1> AND ..." built for base 0 */
} KzPushTable;

/* A verdict as push builds it. */
typedef struct KzVerdict
{
	bool		applied;
	const char *reason;			/* rejected only */
	bool		has_server_row; /* rejected always; applied when transforms ran */
	Jsonb	   *server_row;		/* NULL: JSON null */
	char		mutation_id[37];
} KzVerdict;

/* What the caller of a mutation needs to know about it. */
typedef struct KzMutationCtx
{
	KzMutationReq *req;
	Jsonb	   *mutation;		/* the mutation's jsonb object */
	KzPushTable *tab;
	Datum	   *keyvals;		/* parsed pk, key order */
	int			hlc_skew_ms;
	bool		journaled;		/* a journal row awaits its winner seq */
} KzMutationCtx;

/* push_apply.c */
extern KzColumn *kz_push_column(KzPushTable *tab, const char *name);
extern Jsonb *kz_push_render_row(KzPushTable *tab, Datum *keyvals, bool lock);
extern void kz_push_decide(KzMutationCtx *ctx, KzVerdict *v);
extern void kz_push_reset_deleted(void);
extern Jsonb *kz_jsonb_get(Jsonb *obj, const char *key);
extern char *kz_jsonb_scalar_text(JsonbValue *v);

/* transforms.c: returns NULL when applied (*nrows set), else a reason */
extern const char *kz_push_apply_transforms(KzMutationCtx *ctx, uint64 *nrows);

/* ledger.c */
typedef struct KzLedgerEntry
{
	bool		has_user;
	pg_uuid_t	user_id;
	char	   *table;			/* NULL when not recorded */
	char	   *pk;
	KzVerdict	verdict;		/* server_row as recorded (JSON null) */
} KzLedgerEntry;

extern bool kz_ledger_lookup(const char *mutation_id, KzLedgerEntry *e);
extern void kz_ledger_record(const char *mutation_id, const char *table, const char *pk,
							 const KzVerdict *v);

/* push.c */
extern KzPushTable *kz_push_table(const char *name);
extern Jsonb *kz_verdict_jsonb(const KzVerdict *v);

/* Helpers to run SPI as the caller (RLS and privileges apply). */
extern int	kz_spi_as_caller(const char *sql, int nargs, Oid *types, Datum *values,
							 const char *nulls, bool read_only, long count);
extern int	kz_spi_as_owner(const char *sql, int nargs, Oid *types, Datum *values,
							const char *nulls, bool read_only, long count);

#endif							/* KZ_PUSH_INTERNAL_H */
