/*-------------------------------------------------------------------------
 *
 * push.c
 *	  kizunasync.push(batch jsonb, last_mutation_id uuid, schema_version
 *	  integer, client_id uuid DEFAULT NULL) RETURNS jsonb
 *
 *	  Whole-batch guards, then one verdict per mutation in request order:
 *	  the ledger first (exactly-once effect), else a fresh decision
 *	  (push_decide.c) in its own subtransaction.  An atomic batch runs in
 *	  one more subtransaction and answers {"batch": ...} on its first
 *	  rejection.  Changes are numbered through the capture queue only once
 *	  push keeps them, so rejected or aborted work draws no seq.
 *
 *	  Memory is bounded by one mutation: each is decided in a memory context
 *	  that is reset afterwards, keeping only its verdict.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/uuid.h"

#include "errors.h"
#include "capture_batch.h"
#include "capture_queue.h"
#include "identity.h"
#include "journal.h"
#include "jsonbutil.h"
#include "ledger.h"
#include "push_decide.h"
#include "registry.h"
#include "render.h"
#include "request_push.h"
#include "rowkey.h"
#include "settings.h"
#include "spi.h"
#include "tabledesc.h"
#include "verdict.h"

PG_FUNCTION_INFO_V1(kz_push);

#define PUSH_FNAME	"kizunasync.push()"

typedef struct PushBatch
{
	KzCaller	caller;
	KzPushReq	req;
	KzSettings	settings;
	char	   *sub;
	KzMutationCtx *ctxs;
	KzVerdict  *verdicts;
	bool	   *replay_only;	/* table gone, verdict recorded */
	bool	   *unrecorded;		/* decided, verdict not recorded (COLUMN_DENIED) */
	int			ntables;		/* descriptions made so far */
	KzTableDesc **tables;
	MemoryContext mutation_cxt;
	bool		rejections_recorded;	/* the ledger got a rejection */
} PushBatch;

/* ------------------------------------------------------------ guards */

static void *
push_palloc(void *arg, size_t size)
{
	return palloc(size ? size : 1);
}

static void
push_shape_error(int n, const char *problem, const char *hint)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("mutation %d of the batch is malformed: %s", n, problem),
			 hint ? errhint("%s", hint) : 0));
}

/* The minimum schema version of the named tables (or of all, when none is synced). */
static int
push_min_schema_version(KzPushReq *req)
{
	Datum	   *names = palloc(sizeof(Datum) * (req->ntables + 1));
	Oid			types[1] = {TEXTARRAYOID};
	Datum		values[1];
	bool		isnull;
	Datum		d;
	int			i;
	int			minver;

	for (i = 0; i < req->ntables; i++)
		names[i] = CStringGetTextDatum(req->tables[i]);
	values[0] = PointerGetDatum(construct_array(names, req->ntables, TEXTOID, -1, false,
												TYPALIGN_INT));
	kz_spi_priv("SELECT COALESCE("
				" (SELECT pg_catalog.max(min_schema_version) FROM kizunasync.synced_tables"
				"   WHERE table_name OPERATOR(pg_catalog.=) ANY ($1)),"
				" (SELECT pg_catalog.max(min_schema_version) FROM kizunasync.synced_tables), 1)",
				1, types, values, NULL, true, 1, SPI_OK_SELECT);
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	minver = isnull ? 1 : DatumGetInt32(d);
	SPI_freetuptable(SPI_tuptable);
	return minver;
}

static KzTableDesc *
push_table(PushBatch *b, const char *name)
{
	KzTableDesc *t;
	int			i;

	for (i = 0; i < b->ntables; i++)
		if (strcmp(b->tables[i]->conf->table_name, name) == 0)
			return b->tables[i];
	t = kz_tabledesc_open(name, b->caller.role, true);
	if (t != NULL)
		b->tables[b->ntables++] = t;
	return t;
}

/* Table-dependent shape checks, in request order, then KZP01 and KZP03. */
static void
push_check_shapes(PushBatch *b, Jsonb *batch)
{
	KzPushReq  *req = &b->req;
	Jsonb	   *mutations = req->nmutations > 0 ? kz_jsonb_get(batch, "mutations") : NULL;
	KzLedgerEntry e;
	int			i;

	b->tables = palloc(sizeof(KzTableDesc *) * Max(req->nmutations, 1));
	for (i = 0; i < req->nmutations; i++)
	{
		KzMutationReq *m = &req->mutations[i];
		KzMutationCtx *ctx = &b->ctxs[i];
		int			t;

		ctx->req = m;
		ctx->sub = b->sub;
		ctx->hlc_skew_ms = b->settings.hlc_max_skew_ms;
		ctx->mutation = JsonbValueToJsonb(getIthJsonbValueFromContainer(&mutations->root, i));
		ctx->tab = push_table(b, m->table);
		if (ctx->tab == NULL)
		{
			/*
			 * A mutation of a table no longer synced may still replay: the
			 * recorded id of the same table and key, or, for a verdict whose
			 * table and key the ledger does not keep (an applied one without
			 * a server_row, decisions/0033), the caller's own recorded id.
			 */
			if (kz_ledger_lookup(m->mutation_id, &e) &&
				(e.table != NULL ? strcmp(e.table, m->table) == 0 && e.pk != NULL &&
				 strcmp(e.pk, m->pk) == 0 :
				 b->sub != NULL && e.user_id != NULL && strcmp(b->sub, e.user_id) == 0))
			{
				b->replay_only[i] = true;
				continue;
			}
			push_shape_error(i + 1, psprintf("table %s is not synced",
											 kz_quote_for_message(m->table, strlen(m->table), false)),
							 "Only tables provisioned with kizunasync.sync_table() take pushes.");
		}
		ctx->keyvals = palloc0(sizeof(Datum) * ctx->tab->conf->nkeys);
		if (!kz_rowkey_parse(ctx->tab->conf, m->pk, ctx->keyvals))
			push_shape_error(i + 1, psprintf("pk is not the canonical key text of table \"%s\"", m->table),
							 NULL);
		if (ctx->tab->conf->hlc && m->hlc == NULL)
			push_shape_error(i + 1, psprintf("table \"%s\" resolves by hlc and the mutation carries no hlc",
											 m->table), NULL);
		for (t = 0; t < m->ntransforms; t++)
		{
			KzColumn   *c = kz_tabledesc_column(ctx->tab, m->transforms[t].column);

			if (c != NULL && c->is_key)
				push_shape_error(i + 1, psprintf("transform on \"%s\" targets a key column",
												 m->transforms[t].column), NULL);
		}
	}
	for (i = 0; i < req->nmutations; i++)
		if (!b->replay_only[i] && b->ctxs[i].tab->conf->pull_only)
			ereport(ERROR,
					(errcode(ERRCODE_KZ_PUSH_PULL_ONLY),
					 errmsg("table \"%s\" is pull-only, pushes are rejected", req->mutations[i].table),
					 errhint("Its sync_mode is 'pull-only'.")));
	if (b->settings.require_atomic && !req->atomic)
		ereport(ERROR,
				(errcode(ERRCODE_KZ_PUSH_ATOMIC_REQUIRED),
				 errmsg("non-atomic pushes are refused"),
				 errdetail("The require_atomic setting is on.")));
}

/* ------------------------------------------------------------ processing */

/* Replay of a recorded verdict (SPEC 5.3). */
static void
push_replay(PushBatch *b, KzLedgerEntry *e, KzVerdict *v)
{
	KzTableDesc *t;
	Jsonb	   *row = NULL;

	*v = e->verdict;
	if ((b->sub == NULL) != (e->user_id == NULL) ||
		(b->sub != NULL && strcmp(b->sub, e->user_id) != 0))
	{
		v->applied = false;
		v->reason = KZ_R_RLS_DENIED;
		v->has_server_row = true;
		v->server_row = NULL;
		return;
	}
	if (!v->has_server_row)
		return;
	t = e->table ? push_table(b, e->table) : NULL;
	if (t != NULL && e->pk != NULL)
	{
		Datum	   *keyvals = palloc(sizeof(Datum) * t->conf->nkeys);

		if (kz_rowkey_parse(t->conf, e->pk, keyvals))
			row = kz_render_row(t, keyvals, false);
	}
	if (row == NULL && v->applied)
		v->has_server_row = false;
	v->server_row = row;
}

/*
 * An earlier mutation of this batch with the same id whose verdict was not
 * recorded: the repeat is a replay of it, as of a recorded one.
 */
static bool
push_unrecorded_earlier(PushBatch *b, int i, KzLedgerEntry *e)
{
	int			j;

	for (j = 0; j < i; j++)
	{
		if (!b->unrecorded[j] ||
			strcmp(b->ctxs[j].req->mutation_id, b->ctxs[i].req->mutation_id) != 0)
			continue;
		memset(e, 0, sizeof(*e));
		e->user_id = b->sub;
		e->table = pstrdup(b->ctxs[j].req->table);
		e->pk = pstrdup(b->ctxs[j].req->pk);
		e->verdict = b->verdicts[j];
		e->verdict.server_row = NULL;
		return true;
	}
	return false;
}

/* One mutation: ledger replay or a fresh, recorded decision. */
static void
push_mutation(PushBatch *b, int i, bool queue_per_mutation)
{
	KzMutationCtx *ctx = &b->ctxs[i];
	KzVerdict  *v = &b->verdicts[i];
	KzLedgerEntry e;
	bool		wrote;

	if (push_unrecorded_earlier(b, i, &e) || kz_ledger_lookup(ctx->req->mutation_id, &e))
	{
		push_replay(b, &e, v);
		return;
	}
	if (b->replay_only[i])
		elog(ERROR, "recorded verdict of mutation %s vanished", ctx->req->mutation_id);
	strlcpy(v->mutation_id, ctx->req->mutation_id, sizeof(v->mutation_id));
	if (queue_per_mutation)
	{
		kz_capture_batch_flush();	/* the queue takes changes directly: none may be pending */
		kz_capture_queue_begin();
	}
	kz_push_decide(ctx, v);
	wrote = kz_capture_queue_length() > 0;
	if (queue_per_mutation)
	{
		/*
		 * Record what is queued even when the mutation was rejected: a
		 * rejected unit's writes left the queue with its rolled-back
		 * subtransaction, so what remains was written outside it (a policy
		 * or type function run by the locked render before a COLUMN_DENIED
		 * or DELETE_WINS verdict) and commits; discarding it would leave
		 * committed rows without entries.
		 */
		kz_capture_queue_flush();
		kz_capture_queue_end();
		if (v->applied && ctx->journaled)
			kz_journal_winner_seq(ctx->req->mutation_id);
	}

	/*
	 * COLUMN_DENIED is decided from the caller's column and table
	 * privileges before the mutation writes anything: a replay decides it
	 * again, from the same privileges, and renders the row as a replay of
	 * a recorded verdict would.  It is not recorded, so a caller that may
	 * only read a table cannot fill the ledger (decisions/0033).  Anything
	 * that wrote, even outside the unit, is recorded.
	 */
	if (!v->applied && strcmp(v->reason, KZ_R_COLUMN_DENIED) == 0 && !wrote)
	{
		b->unrecorded[i] = true;
		return;
	}
	kz_ledger_record(ctx->req->mutation_id, b->sub, ctx->req->table, ctx->req->pk, v);
	if (!v->applied)
		b->rejections_recorded = true;
}

/*
 * Run mutation i in the per-mutation memory context; only its verdict (and
 * its server row, copied out) survives.
 */
static void
push_mutation_bounded(PushBatch *b, int i, bool queue_per_mutation)
{
	MemoryContext batch_cxt = MemoryContextSwitchTo(b->mutation_cxt);

	push_mutation(b, i, queue_per_mutation);
	MemoryContextSwitchTo(batch_cxt);
	kz_verdict_copy_to(&b->verdicts[i], batch_cxt);
	b->verdicts[i].reason = b->verdicts[i].reason ?
		MemoryContextStrdup(batch_cxt, b->verdicts[i].reason) : NULL;
	MemoryContextReset(b->mutation_cxt);
}

/* Returns the index of the offender, or -1 when every mutation applied. */
static int
push_run_atomic(PushBatch *b)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	volatile int offender = -1;
	int			i;

	kz_capture_batch_flush();	/* the queue takes changes directly: none may be pending */
	kz_capture_queue_begin();
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		for (i = 0; i < b->req.nmutations; i++)
		{
			push_mutation_bounded(b, i, false);
			if (!b->verdicts[i].applied)
			{
				offender = i;
				break;
			}
		}
	}
	PG_CATCH();
	{
		/* an error of the call: leave no subtransaction open behind it */
		ReThrowError(kz_subxact_catch(cxt, owner));
	}
	PG_END_TRY();
	if (offender >= 0)
	{
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		kz_capture_queue_discard();
		kz_capture_queue_end();
		return offender;
	}
	ReleaseCurrentSubTransaction();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
	kz_capture_queue_flush();
	kz_capture_queue_end();
	for (i = 0; i < b->req.nmutations; i++)
		if (b->ctxs[i].journaled)
			kz_journal_winner_seq(b->ctxs[i].req->mutation_id);
	return -1;
}

/* Client registry (SPEC 5.11). */
static void
push_register_client(PushBatch *b, pg_uuid_t *client, int32 schema_version,
					 const char *last_accepted)
{
	bool		wanted = false;
	int			i;

	for (i = 0; i < b->req.ntables && !wanted; i++)
	{
		KzTableConf *c = kz_tableconf_by_name(b->req.tables[i], true);

		wanted = c != NULL && c->register_clients;
	}
	if (!wanted)
		return;
	if (b->sub == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("registering a client requires a JWT \"sub\" claim"),
				 errdetail("A table of this push registers clients, and the caller has no user id.")));
	kz_registry_touch(b->sub, client, schema_version, NULL, false, 0, last_accepted);
}

static Jsonb *
push_call(FunctionCallInfo fcinfo)
{
	bool		sv_null = PG_ARGISNULL(2);
	int32		schema_version = sv_null ? 0 : PG_GETARG_INT32(2);
	pg_uuid_t	session;
	pg_uuid_t  *client = NULL;
	PushBatch  *b = palloc0(sizeof(PushBatch));
	KzReqError	err;
	Jsonb	   *batch = NULL;
	Jsonb	   *result;
	const char *last_accepted = NULL;
	bool		aborted = false;
	char	   *text;
	int			i;

	kz_entry(fcinfo, PUSH_FNAME, true, &b->caller);

	/* JWT session id first: a malformed claim fails the call (22P02) */
	if (kz_jwt_session_id(&session))
		client = &session;
	if (!PG_ARGISNULL(3))
		client = PG_GETARG_UUID_P(3);
	b->sub = kz_jwt_sub();

	/* the size limit before the batch is detoasted */
	if (!PG_ARGISNULL(0))
	{
		if (toast_raw_datum_size(PG_GETARG_DATUM(0)) > KZ_PUSH_MAX_BODY_BYTES)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("batch is larger than the request size limit"),
					 errdetail("The limit is %d bytes.", KZ_PUSH_MAX_BODY_BYTES)));
		batch = PG_GETARG_JSONB_P(0);
	}
	text = batch ? JsonbToCString(NULL, &batch->root, VARSIZE(batch)) : pstrdup("{}");
	if (!kz_push_parse(text, strlen(text), push_palloc, NULL, &b->req, &err))
	{
		kz_push_release(&b->req);
		kz_raise_request_error(&err);
	}

	kz_spi_connect();
	kz_push_decide_reset();
	kz_settings_read(&b->settings);

	/* schema gate, before any shape check */
	if (sv_null || schema_version < push_min_schema_version(&b->req))
	{
		kz_push_release(&b->req);
		kz_spi_finish();
		return kz_push_signal_response();
	}
	if (b->req.nmutations > b->settings.max_batch_size)
		ereport(ERROR,
				(errcode(ERRCODE_KZ_PUSH_BATCH_TOO_LARGE),
				 errmsg("batch of %d mutations exceeds max_batch_size %d",
						b->req.nmutations, b->settings.max_batch_size)));
	if (!kz_push_validate(&b->req, push_palloc, NULL, &err))
		kz_raise_request_error(&err);

	b->ctxs = palloc0(sizeof(KzMutationCtx) * (b->req.nmutations + 1));
	b->verdicts = palloc0(sizeof(KzVerdict) * (b->req.nmutations + 1));
	b->replay_only = palloc0(sizeof(bool) * (b->req.nmutations + 1));
	b->unrecorded = palloc0(sizeof(bool) * (b->req.nmutations + 1));
	push_check_shapes(b, batch);

	b->mutation_cxt = AllocSetContextCreate(CurrentMemoryContext, "kizunasync mutation",
											ALLOCSET_DEFAULT_SIZES);
	if (b->req.atomic && b->req.nmutations > 0)
	{
		int			offender = push_run_atomic(b);

		aborted = offender >= 0;
		result = aborted ? kz_batch_abort_response(&b->verdicts[offender])
			: kz_verdicts_response(b->verdicts, b->req.nmutations);
	}
	else
	{
		for (i = 0; i < b->req.nmutations; i++)
			push_mutation_bounded(b, i, true);
		result = kz_verdicts_response(b->verdicts, b->req.nmutations);
	}
	for (i = 0; i < b->req.nmutations && !aborted; i++)
		if (b->verdicts[i].applied)
			last_accepted = b->verdicts[i].mutation_id;
	if (client != NULL)
		push_register_client(b, client, schema_version, last_accepted);

	/*
	 * The user's rejections beyond the quota.  Not under SERIALIZABLE: the
	 * scan would take predicate locks on the ledger, and syncing a table
	 * adds no serialization failure to pushes (decisions/0086); the next
	 * push of the user in another isolation level bounds them.
	 */
	if (b->rejections_recorded && !aborted && b->sub != NULL && !IsolationIsSerializable())
		(void) kz_ledger_bound_rejections(b->sub);

	kz_push_release(&b->req);
	/* the result must outlive SPI_finish */
	result = (Jsonb *) SPI_datumTransfer(JsonbPGetDatum(result), false, -1);
	kz_spi_finish();
	return result;
}

static Datum
push_entry(FunctionCallInfo fcinfo)
{
	ErrorContextCallback cb;
	Jsonb	   *result;

	kz_errcontext_push(&cb, PUSH_FNAME);
	result = push_call(fcinfo);
	kz_errcontext_pop(&cb);
	PG_RETURN_JSONB_P(result);
}

Datum
kz_push(PG_FUNCTION_ARGS)
{
	return kz_entry_guarded(fcinfo, PUSH_FNAME, push_entry);
}
