/*-------------------------------------------------------------------------
 *
 * push_decide.c
 *	  The per-mutation decision of kizunasync.push (push_decide.h).
 *
 *	  Every statement on the application row runs as the caller
 *	  (push_write.c), so RLS policies and column privileges apply;
 *	  bookkeeping is read in privileged sections.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"

#include "capture_queue.h"
#include "entry_read.h"
#include "errors.h"
#include "grants.h"
#include "journal.h"
#include "jsonbutil.h"
#include "push_decide.h"
#include "push_hlc.h"
#include "push_write.h"
#include "render.h"
#include "rowprobe.h"
#include "spi.h"
#include "transforms.h"

/* kizunasync.log_rejections: log why a mutation was rejected */
static bool log_rejections = false;

void
kz_push_decide_define_gucs(void)
{
	DefineCustomBoolVariable("kizunasync.log_rejections",
							 "Logs why push rejected a mutation as COLUMN_DENIED or CONSTRAINT.",
							 "The wire carries only the reason; the log names the column or the error.",
							 &log_rejections,
							 false,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);
}

/* The state of one mutation's decision. */
typedef struct DecideUnit
{
	KzMutationCtx *ctx;
	Jsonb	   *row;			/* caller-visible row before the unit */
	Jsonb	   *locked;
	Jsonb	   *columns;		/* {} when absent */
	Jsonb	   *precondition;	/* NULL when absent */
} DecideUnit;

/* ------------------------------------------------------- removed-row check */

/*
 * The newest tombstone of (table, pk) that no newer upsert follows, as snap
 * sees it.  Returns its bucket value, or NULL when there is none; *xmin is
 * the transaction that wrote it.
 */
static char *
decide_tombstone_as_of(KzTableDesc *t, const char *pk, Snapshot snap, TransactionId *xmin)
{
	char	   *bucket = NULL;

	if (!kz_entry_tombstone_of(t->conf, pk, snap, &bucket, xmin))
		return NULL;
	return bucket;
}

/*
 * The newest live tombstone of (table, pk): its bucket value, or NULL.
 *
 * It is read with the latest snapshot, not the push statement's: the
 * lookup follows the row lock (or the DELETE) that may have waited for a
 * concurrent delete, and that delete's tombstone committed after the
 * statement began (under READ COMMITTED the waiting statement goes on
 * with the newest row version, so its tombstone must be seen too).  Under
 * REPEATABLE READ or SERIALIZABLE the answer is the transaction
 * snapshot's, and a live tombstone written after that snapshot (the row
 * was deleted concurrently) fails the call with 40001, as PostgreSQL's
 * own statements do on a concurrent delete; the retry sees it.
 */
static char *
decide_live_tombstone(KzTableDesc *t, const char *pk)
{
	TransactionId xmin;
	char	   *bucket = decide_tombstone_as_of(t, pk, GetLatestSnapshot(), &xmin);

	if (!IsolationUsesXactSnapshot())
		return bucket;
	if (bucket != NULL && !TransactionIdIsCurrentTransactionId(xmin) &&
		XidInMVCCSnapshot(xmin, GetTransactionSnapshot()))
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not serialize access due to concurrent delete"),
				 errdetail("The row of synced table \"%s\" that the mutation writes was deleted after this transaction's snapshot was taken.",
						   t->conf->table_name),
				 errhint("Retry the push.")));
	return decide_tombstone_as_of(t, pk, GetTransactionSnapshot(), &xmin);
}

/*
 * Rows deleted earlier in this push call (non-atomic batches flush each
 * mutation, so the capture queue no longer shows them).  Kept in the
 * call's memory (TopTransactionContext would outlive it; the list is reset
 * at the start of every push).
 */
typedef struct DeletedRow
{
	char	   *table;
	char	   *pk;
	struct DeletedRow *next;
} DeletedRow;

static DeletedRow *deleted_rows = NULL;
static MemoryContext deleted_cxt = NULL;

void
kz_push_decide_reset(void)
{
	deleted_rows = NULL;
	deleted_cxt = CurrentMemoryContext;
}

static void
decide_remember_delete(KzTableDesc *t, const char *pk)
{
	DeletedRow *d = MemoryContextAlloc(deleted_cxt, sizeof(DeletedRow));

	d->table = MemoryContextStrdup(deleted_cxt, t->conf->table_name);
	d->pk = MemoryContextStrdup(deleted_cxt, pk);
	d->next = deleted_rows;
	deleted_rows = d;
}

/* 'd': deleted here; 'u': written here since; '\0': nothing */
static char
decide_deleted_here(KzTableDesc *t, const char *pk)
{
	DeletedRow *d;
	char		q = kz_capture_queued_op(t->conf->table_name, pk);

	if (q != '\0')
		return q;
	for (d = deleted_rows; d; d = d->next)
		if (strcmp(d->table, t->conf->table_name) == 0 && strcmp(d->pk, pk) == 0)
			return 'd';
	return '\0';
}

/* ------------------------------------------------------------ the unit */

static void
decide_journal(DecideUnit *u, const char **names, int n)
{
	KzTableDesc *t = u->ctx->tab;
	const char **cols;
	int			ncols = 0;
	int			i;

	if (!t->conf->conflict_journal || u->row == NULL || n == 0)
		return;
	cols = palloc(sizeof(char *) * n);
	for (i = 0; i < n; i++)
		if (!kz_tabledesc_column(t, names[i])->is_key)
			cols[ncols++] = names[i];
	if (ncols > 0 &&
		kz_journal_record(t->conf->table_name, u->ctx->req->pk, u->ctx->req->mutation_id,
						  t->conf->hlc ? "hlc" : "arrival", cols, ncols, u->row,
						  kz_render_row(t, u->ctx->keyvals, false)))
		u->ctx->journaled = true;
}

/* c. a delete: DELETE_WINS, PRECONDITION or RLS_DENIED when nothing went */
static const char *
decide_delete(DecideUnit *u)
{
	KzMutationCtx *ctx = u->ctx;
	KzMutationReq *m = ctx->req;
	KzTableDesc *t = ctx->tab;
	char	   *bucket;

	if (kz_push_delete(t, m, ctx->keyvals, u->precondition) > 0)
	{
		decide_remember_delete(t, m->pk);
		return NULL;
	}
	bucket = decide_live_tombstone(t, m->pk);
	if (bucket != NULL && ctx->sub != NULL && kz_grants_held(ctx->sub, t->conf->table_name, bucket))
	{
		u->row = NULL;
		return KZ_R_DELETE_WINS;
	}
	u->row = kz_render_row(t, ctx->keyvals, false);
	if (u->row != NULL && !kz_push_precondition_holds(t, m, u->row, u->precondition))
		return KZ_R_PRECONDITION;
	return KZ_R_RLS_DENIED;
}

/*
 * d. hlc mode.  An insert of a key the caller cannot see (RLS, or a
 * concurrent inserter) is serialized on the row's clock map and looked at
 * again.  Returns the reason, or NULL when the columns were resolved.
 */
static const char *
decide_hlc(DecideUnit *u)
{
	KzMutationCtx *ctx = u->ctx;
	KzMutationReq *m = ctx->req;
	KzTableDesc *t = ctx->tab;

	if (u->locked == NULL)
	{
		if (m->op != KZ_OP_INSERT || kz_row_exists(t->conf, ctx->keyvals))
			return KZ_R_RLS_DENIED;
		kz_push_hlc_lock(t, m->pk);
		if (kz_row_exists(t->conf, ctx->keyvals))
		{
			u->locked = kz_render_row(t, ctx->keyvals, true);
			if (u->locked == NULL)
			{
				u->row = NULL;
				return KZ_R_RLS_DENIED;
			}
			u->row = u->locked;
		}
	}
	return kz_push_hlc_apply(t, m, ctx->keyvals, u->columns, ctx->hlc_skew_ms, &u->row,
							 &ctx->journaled);
}

/* Returns NULL (applied; v filled) or a rejection reason (u->row = server_row). */
static const char *
decide_unit_body(DecideUnit *u, KzVerdict *v)
{
	KzMutationCtx *ctx = u->ctx;
	KzMutationReq *m = ctx->req;
	KzTableDesc *t = ctx->tab;
	bool		has_transforms = m->op == KZ_OP_UPDATE && m->ntransforms > 0;
	bool		columns_done = false;

	/* a. insert key authority */
	if (m->op == KZ_OP_INSERT && !kz_push_insert_keys_agree(t, m, ctx->keyvals, u->columns))
		return KZ_R_CONSTRAINT;

	/* b. precondition */
	if (!kz_push_precondition_holds(t, m, u->row, u->precondition))
		return KZ_R_PRECONDITION;

	/* c. delete */
	if (m->op == KZ_OP_DELETE)
		return decide_delete(u);

	/* d. hlc mode */
	if (t->conf->hlc && m->ncolumns > 0)
	{
		const char *r = decide_hlc(u);

		if (r != NULL && (!has_transforms || strcmp(r, KZ_R_SUPERSEDED) != 0))
			return r;
		columns_done = true;
	}

	if (!columns_done)
	{
		if (m->op == KZ_OP_INSERT)
		{
			kz_push_upsert(t, ctx->keyvals, u->columns, m->columns, m->ncolumns);
			decide_journal(u, m->columns, m->ncolumns);
			return NULL;
		}
		else if (m->ncolumns > 0)
		{
			if (kz_push_update(t, ctx->keyvals, u->columns, m->columns, m->ncolumns) == 0)
				return KZ_R_RLS_DENIED;
			decide_journal(u, m->columns, m->ncolumns);
		}
		else if (!has_transforms)
			return KZ_R_RLS_DENIED;
	}

	if (has_transforms)
	{
		uint64		n = 0;
		const char *r = kz_transforms_apply(t, m, ctx->mutation, ctx->keyvals, &n);

		if (r != NULL)
			return r;
		if (n == 0)
			return KZ_R_RLS_DENIED;
		v->has_server_row = true;
		v->server_row = kz_render_row(t, ctx->keyvals, false);
	}
	return NULL;
}

/*
 * SQLSTATEs a unit turns into a verdict; anything else fails the push.
 * A syntax error (42601) counts when a statement raised it while running,
 * not while it was parsed (a parse error carries a position): it is what
 * the input functions of ltree, lquery, hstore, tsquery, jsonpath and
 * others raise for a value they refuse, where built-in types raise class 22.
 */
static const char *
decide_classify_error(const ErrorData *edata)
{
	int			sqlerrcode = edata->sqlerrcode;

	if (sqlerrcode == ERRCODE_INSUFFICIENT_PRIVILEGE)
		return KZ_R_RLS_DENIED;
	if (ERRCODE_TO_CATEGORY(sqlerrcode) == ERRCODE_INTEGRITY_CONSTRAINT_VIOLATION ||
		ERRCODE_TO_CATEGORY(sqlerrcode) == ERRCODE_DATA_EXCEPTION ||
		sqlerrcode == ERRCODE_RAISE_EXCEPTION ||
		sqlerrcode == ERRCODE_GENERATED_ALWAYS)
		return KZ_R_CONSTRAINT;
	if (sqlerrcode == ERRCODE_SYNTAX_ERROR && edata->cursorpos == 0 && edata->internalpos == 0)
		return KZ_R_CONSTRAINT;
	return NULL;
}

static void
decide_log_rejection(const KzMutationCtx *ctx, const char *reason, const char *why)
{
	if (!log_rejections)
		return;
	ereport(LOG,
			(errmsg("rejected mutation %s of table \"%s\" as %s",
					ctx->req->mutation_id, ctx->tab->conf->table_name, reason),
			 errdetail_internal("%s", why)));
}

/* Run the unit in a subtransaction; a rejection rolls back all its writes. */
static void
decide_run_unit(DecideUnit *u, KzVerdict *v)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	const char *volatile reason = NULL;
	volatile bool caught = false;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		reason = decide_unit_body(u, v);
	}
	PG_CATCH();
	{
		ErrorData  *edata = kz_subxact_catch(cxt, owner);

		reason = decide_classify_error(edata);
		if (reason == NULL)
			ReThrowError(edata);	/* an error of the call, never a verdict */
		decide_log_rejection(u->ctx, reason,
							 psprintf("%s: %s%s%s", unpack_sql_state(edata->sqlerrcode),
									  edata->message,
									  edata->detail ? " " : "",
									  edata->detail ? edata->detail : ""));
		FreeErrorData(edata);
		caught = true;
	}
	PG_END_TRY();

	if (reason == NULL)
		ReleaseCurrentSubTransaction();
	else
	{
		if (!caught)
			RollbackAndReleaseCurrentSubTransaction();
		v->applied = false;
		v->reason = reason;
		v->has_server_row = true;
		v->server_row = strcmp(reason, KZ_R_DELETE_WINS) == 0 ? NULL : u->row;
	}
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
}

static void
decide_reject(KzVerdict *v, const char *reason, Jsonb *row)
{
	v->applied = false;
	v->reason = reason;
	v->has_server_row = true;
	v->server_row = row;
}

/* The first column the caller's privileges refuse, for the log. */
static const char *
decide_denied_column(KzTableDesc *t, const KzMutationReq *m)
{
	int			i;

	if (m->op == KZ_OP_DELETE)
		return "DELETE on the table";
	for (i = 0; i < m->ncolumns; i++)
	{
		KzColumn   *c = kz_tabledesc_column(t, m->columns[i]);

		if (c == NULL || c->generated || !c->can_update || !c->can_insert)
			return psprintf("column \"%s\"", m->columns[i]);
	}
	for (i = 0; i < m->ntransforms; i++)
		return psprintf("column \"%s\" (transform)", m->transforms[i].column);
	return "a key column";
}

void
kz_push_decide(KzMutationCtx *ctx, KzVerdict *v)
{
	KzMutationReq *m = ctx->req;
	KzTableDesc *t = ctx->tab;
	DecideUnit	u;
	bool		denied;
	char		here;

	memset(&u, 0, sizeof(u));
	u.ctx = ctx;
	v->applied = true;
	v->has_server_row = false;
	v->server_row = NULL;
	v->reason = NULL;

	u.columns = kz_jsonb_get(ctx->mutation, "columns");
	if (u.columns == NULL || !JB_ROOT_IS_OBJECT(u.columns) || JB_ROOT_IS_SCALAR(u.columns))
		u.columns = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum("{}")));
	if (m->has_precondition)
		u.precondition = kz_jsonb_get(ctx->mutation, "precondition");

	denied = kz_push_column_denied(t, m);

	if (m->op != KZ_OP_DELETE)
		u.locked = kz_render_row(t, ctx->keyvals, true);

	/*
	 * Removed-row check, for every op, after the row lock.  A tombstone
	 * counts only for a caller that holds the grant of its bucket (one that
	 * pull delivers it to): any other caller is answered as its own
	 * statements are under its policies, so the answer never tells it that
	 * a key it could not see was once used (decisions/0030).
	 */
	here = decide_deleted_here(t, m->pk);
	if (here == 'd')
	{
		decide_reject(v, KZ_R_DELETE_WINS, NULL);
		return;
	}
	if (here == '\0')
	{
		char	   *bucket = decide_live_tombstone(t, m->pk);

		if (bucket != NULL && ctx->sub != NULL &&
			kz_grants_held(ctx->sub, t->conf->table_name, bucket))
		{
			decide_reject(v, KZ_R_DELETE_WINS, NULL);
			return;
		}
	}

	u.row = u.locked ? u.locked : kz_render_row(t, ctx->keyvals, false);
	if (denied)
	{
		decide_log_rejection(ctx, KZ_R_COLUMN_DENIED,
							 psprintf("The caller may not write %s.", decide_denied_column(t, m)));
		decide_reject(v, KZ_R_COLUMN_DENIED, u.row);
		return;
	}

	decide_run_unit(&u, v);
}
