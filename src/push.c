/*-------------------------------------------------------------------------
 *
 * push.c
 *	  kizunasync.push(batch jsonb, last_mutation_id uuid, schema_version
 *	  integer, client_id uuid DEFAULT NULL) RETURNS jsonb
 *
 *	  Whole-batch guards, then one verdict per mutation in request order:
 *	  the ledger first (exactly-once effect), else a fresh decision
 *	  (push_apply.c) in its own subtransaction.  An atomic batch runs in one
 *	  more subtransaction and answers {"batch": ...} on its first rejection.
 *	  Changes are numbered through the capture queue (sequencing.h) only
 *	  once push keeps them, so rejected or aborted work draws no seq.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/uuid.h"

#include "identity.h"
#include "kizunasync.h"
#include "jsonbutil.h"
#include "plancache.h"
#include "push_internal.h"
#include "rowkey.h"
#include "sequencing.h"
#include "tableconf.h"

PG_FUNCTION_INFO_V1(kz_push);


/* Tables seen by the current call (reset at every call). */
typedef struct TableCacheEntry
{
	KzPushTable *tab;
	struct TableCacheEntry *next;
} TableCacheEntry;

static TableCacheEntry *table_cache = NULL;

/* ------------------------------------------------------------ SPI helpers */

/* Run a statement through the backend-lifetime plan cache (plancache.c). */
static int
spi_run(const char *sql, int nargs, Oid *types, Datum *values, const char *nulls,
		bool read_only, long count)
{
	SPIPlanPtr	plan = kz_plan_cached(sql, nargs, types);
	int			rc;

	/* never read-only: every statement must see the writes made before it */
	(void) read_only;
	rc = SPI_execute_plan(plan, values, nulls, false, count);
	if (rc < 0)
		elog(ERROR, "kizunasync.push(): SPI failed (%s) on: %s", SPI_result_code_string(rc), sql);
	return rc;
}

int
kz_spi_as_caller(const char *sql, int nargs, Oid *types, Datum *values, const char *nulls,
				 bool read_only, long count)
{
	KzAsCaller	save;
	int			rc;

	kz_as_caller_begin(&save);
	rc = spi_run(sql, nargs, types, values, nulls, read_only, count);
	kz_as_caller_end(&save);
	return rc;
}

int
kz_spi_as_owner(const char *sql, int nargs, Oid *types, Datum *values, const char *nulls,
				bool read_only, long count)
{
	return spi_run(sql, nargs, types, values, nulls, read_only, count);
}

/* ------------------------------------------------------------ tables */

static bool
priv(Oid relid, AttrNumber attnum, Oid role, AclMode mode)
{
	return pg_class_aclcheck(relid, role, mode) == ACLCHECK_OK ||
		pg_attribute_aclcheck(relid, attnum, role, mode) == ACLCHECK_OK;
}

KzPushTable *
kz_push_table(const char *name)
{
	TableCacheEntry *e;
	KzTableConf *conf;
	KzPushTable *tab;
	Relation	rel;
	TupleDesc	desc;
	Oid			role = kz_caller_role();
	StringInfoData proj;
	int			i;

	for (e = table_cache; e; e = e->next)
		if (strcmp(e->tab->conf->table_name, name) == 0)
			return e->tab;
	conf = kz_tableconf_by_name(name, true);
	if (conf == NULL)
		return NULL;

	tab = palloc0(sizeof(KzPushTable));
	tab->conf = conf;
	tab->qname = quote_qualified_identifier(get_namespace_name(get_rel_namespace(conf->relid)),
											get_rel_name(conf->relid));
	rel = table_open(conf->relid, AccessShareLock);
	desc = RelationGetDescr(rel);
	tab->cols = palloc0(sizeof(KzColumn) * desc->natts);
	tab->can_delete = pg_class_aclcheck(conf->relid, role, ACL_DELETE) == ACLCHECK_OK;
	tab->can_update_any = pg_class_aclcheck(conf->relid, role, ACL_UPDATE) == ACLCHECK_OK ||
		pg_attribute_aclcheck_all(conf->relid, role, ACL_UPDATE, ACLMASK_ANY) == ACLCHECK_OK;
	initStringInfo(&proj);
	tab->keys_readable = true;
	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		KzColumn   *c;
		int			k;

		if (att->attisdropped)
			continue;
		c = &tab->cols[tab->ncols++];
		c->name = pstrdup(NameStr(att->attname));
		c->attnum = att->attnum;
		c->typid = att->atttypid;
		c->basetype = getBaseType(att->atttypid);
		c->typname_sql = format_type_with_typemod(att->atttypid, att->atttypmod);
		c->generated = att->attgenerated != '\0';
		c->can_select = priv(conf->relid, att->attnum, role, ACL_SELECT);
		c->can_insert = priv(conf->relid, att->attnum, role, ACL_INSERT);
		c->can_update = priv(conf->relid, att->attnum, role, ACL_UPDATE);
		for (k = 0; k < conf->nkeys; k++)
			if (conf->key_attnums[k] == att->attnum)
				c->is_key = true;
		if (c->is_key && !c->can_select)
			tab->keys_readable = false;
		if (c->can_select)
			appendStringInfo(&proj, "%s%s", proj.len ? ", " : "", quote_identifier(c->name));
	}
	table_close(rel, AccessShareLock);
	tab->projection = proj.len ? proj.data : NULL;

	e = palloc(sizeof(TableCacheEntry));
	e->tab = tab;
	e->next = table_cache;
	table_cache = e;
	return tab;
}

/* ------------------------------------------------------------ verdicts */

static void
push_string(JsonbParseState **st, JsonbIteratorToken tok, const char *s)
{
	JsonbValue	v;

	v.type = jbvString;
	v.val.string.val = (char *) s;
	v.val.string.len = strlen(s);
	pushJsonbValue(st, tok, &v);
}

static void
push_jsonb(JsonbParseState **st, JsonbIteratorToken tok, Jsonb *jb)
{
	JsonbValue	v;

	if (jb == NULL)
	{
		v.type = jbvNull;
		pushJsonbValue(st, tok, &v);
		return;
	}
	v.type = jbvBinary;
	v.val.binary.data = &jb->root;
	v.val.binary.len = VARSIZE(jb) - VARHDRSZ;
	pushJsonbValue(st, tok, &v);
}

Jsonb *
kz_verdict_jsonb(const KzVerdict *v)
{
	JsonbParseState *st = NULL;
	JsonbValue *res;

	pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
	kz_jsonb_push_key(&st, "mutation_id");
	push_string(&st, WJB_VALUE, v->mutation_id);
	if (!v->applied)
	{
		kz_jsonb_push_key(&st, "reason");
		push_string(&st, WJB_VALUE, v->reason);
	}
	if (v->has_server_row || !v->applied)
	{
		kz_jsonb_push_key(&st, "server_row");
		push_jsonb(&st, WJB_VALUE, v->server_row);
	}
	kz_jsonb_push_key(&st, "verdict");
	push_string(&st, WJB_VALUE, v->applied ? "applied" : "rejected");
	res = pushJsonbValue(&st, WJB_END_OBJECT, NULL);
	return JsonbValueToJsonb(res);
}

static Jsonb *
verdicts_response(KzVerdict *vs, int n)
{
	JsonbParseState *st = NULL;
	JsonbValue *res;
	int			i;

	pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
	kz_jsonb_push_key(&st, "verdicts");
	pushJsonbValue(&st, WJB_BEGIN_ARRAY, NULL);
	for (i = 0; i < n; i++)
		push_jsonb(&st, WJB_ELEM, kz_verdict_jsonb(&vs[i]));
	pushJsonbValue(&st, WJB_END_ARRAY, NULL);
	res = pushJsonbValue(&st, WJB_END_OBJECT, NULL);
	return JsonbValueToJsonb(res);
}

static Jsonb *
abort_response(const KzVerdict *v)
{
	JsonbParseState *st = NULL;
	JsonbValue *res;

	pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
	kz_jsonb_push_key(&st, "batch");
	pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
	kz_jsonb_push_key(&st, "offender_mutation_id");
	push_string(&st, WJB_VALUE, v->mutation_id);
	kz_jsonb_push_key(&st, "outcome");
	push_string(&st, WJB_VALUE, "aborted");
	kz_jsonb_push_key(&st, "reason");
	push_string(&st, WJB_VALUE, v->reason);
	kz_jsonb_push_key(&st, "server_row");
	push_jsonb(&st, WJB_VALUE, v->server_row);
	pushJsonbValue(&st, WJB_END_OBJECT, NULL);
	res = pushJsonbValue(&st, WJB_END_OBJECT, NULL);
	return JsonbValueToJsonb(res);
}

static Jsonb *
signal_response(void)
{
	return DatumGetJsonbP(DirectFunctionCall1(jsonb_in,
											  CStringGetDatum("{\"signal\": {\"type\": \"RESET_REQUIRED\"}}")));
}

/* ------------------------------------------------------------ guards */

typedef struct PushSettings
{
	int			max_batch_size;
	bool		require_atomic;
	int			hlc_max_skew_ms;
} PushSettings;

static void
read_settings(PushSettings *s)
{
	bool		isnull;
	HeapTuple	tup;
	TupleDesc	desc;

	kz_spi_as_owner("SELECT max_batch_size, require_atomic, hlc_max_skew_ms FROM kizunasync.settings",
					0, NULL, NULL, NULL, true, 1);
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("kizunasync.push(): kizunasync.settings has no row")));
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	s->max_batch_size = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
	s->require_atomic = DatumGetBool(SPI_getbinval(tup, desc, 2, &isnull));
	s->hlc_max_skew_ms = DatumGetInt32(SPI_getbinval(tup, desc, 3, &isnull));
}

/* The minimum schema version of the named tables (or of all, when none is synced). */
static int
min_schema_version(KzPushReq *req)
{
	Datum	   *names = palloc(sizeof(Datum) * (req->ntables + 1));
	Oid			types[1] = {TEXTARRAYOID};
	Datum		values[1];
	bool		isnull;
	Datum		d;
	int			i;

	for (i = 0; i < req->ntables; i++)
		names[i] = CStringGetTextDatum(req->tables[i]);
	values[0] = PointerGetDatum(construct_array(names, req->ntables, TEXTOID, -1, false,
												TYPALIGN_INT));
	kz_spi_as_owner("SELECT COALESCE("
					" (SELECT max(min_schema_version) FROM kizunasync.synced_tables WHERE table_name = ANY ($1)),"
					" (SELECT max(min_schema_version) FROM kizunasync.synced_tables), 1)",
					1, types, values, NULL, true, 1);
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return isnull ? 1 : DatumGetInt32(d);
}

static void
raise_request_error(const KzReqError *err)
{
	ereport(ERROR,
			(errcode(MAKE_SQLSTATE(err->sqlstate[0], err->sqlstate[1], err->sqlstate[2],
								   err->sqlstate[3], err->sqlstate[4])),
			 errmsg("%s", err->message),
			 err->detail[0] ? errdetail("%s", err->detail) : 0));
}

static void *
palloc_fn(void *arg, size_t size)
{
	return palloc(size ? size : 1);
}

static void
shape_error(int n, const char *problem, const char *hint)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("kizunasync.push(): mutation %d of the batch is malformed: %s", n, problem),
			 hint ? errhint("%s", hint) : 0));
}

/* ------------------------------------------------------------ processing */

/* Replay of a recorded verdict (SPEC §5.3). */
static void
replay(KzLedgerEntry *e, KzVerdict *v)
{
	pg_uuid_t	uid;
	bool		has_uid = kz_caller_uid(&uid);
	KzPushTable *tab;
	Jsonb	   *row = NULL;

	*v = e->verdict;
	if (has_uid != e->has_user ||
		(has_uid && memcmp(&uid, &e->user_id, sizeof(pg_uuid_t)) != 0))
	{
		v->applied = false;
		v->reason = KZ_R_RLS_DENIED;
		v->has_server_row = true;
		v->server_row = NULL;
		return;
	}
	if (!v->has_server_row)
		return;
	tab = e->table ? kz_push_table(e->table) : NULL;
	if (tab != NULL && e->pk != NULL)
	{
		Datum	   *keyvals = palloc(sizeof(Datum) * tab->conf->nkeys);

		if (kz_rowkey_parse(tab->conf, e->pk, keyvals))
			row = kz_push_render_row(tab, keyvals, false);
	}
	if (row == NULL && v->applied)
		v->has_server_row = false;
	v->server_row = row;
}

typedef struct BatchState
{
	KzPushReq  *req;
	Jsonb	   *batch;
	KzMutationCtx *ctxs;
	KzVerdict  *verdicts;
	int			skew_ms;
} BatchState;

/* Fill in winner_seq of the journal rows of an applied, numbered mutation. */
static void
journal_winner_seq(const char *mutation_id)
{
	Oid			types[1] = {UUIDOID};
	Datum		values[1];

	values[0] = DirectFunctionCall1(uuid_in, CStringGetDatum(mutation_id));
	kz_spi_as_owner("UPDATE kizunasync.conflict_journal j SET winner_seq = c.seq"
					" FROM kizunasync.changelog c"
					" WHERE j.winner_mutation_id = $1 AND j.winner_seq IS NULL"
					" AND c.table_name = j.table_name AND c.pk = j.pk",
					1, types, values, NULL, false, 0);
}

/* One mutation: ledger replay or a fresh, recorded decision. */
static void
process_mutation(BatchState *b, int i, bool queue_per_mutation)
{
	KzMutationCtx *ctx = &b->ctxs[i];
	KzVerdict  *v = &b->verdicts[i];
	KzLedgerEntry e;

	if (kz_ledger_lookup(ctx->req->mutation_id, &e))
	{
		replay(&e, v);
		return;
	}
	strlcpy(v->mutation_id, ctx->req->mutation_id, sizeof(v->mutation_id));
	if (queue_per_mutation)
		kz_capture_queue_begin();
	kz_push_decide(ctx, v);
	if (queue_per_mutation)
	{
		if (v->applied)
			kz_capture_queue_flush();
		else
			kz_capture_queue_discard();
		kz_capture_queue_end();
		if (v->applied && ctx->journaled)
			journal_winner_seq(ctx->req->mutation_id);
	}
	kz_ledger_record(ctx->req->mutation_id, ctx->req->table, ctx->req->pk, v);
}

/* Returns the index of the offender, or -1 when every mutation applied. */
static int
run_atomic(BatchState *b)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	volatile int offender = -1;
	int			i;

	kz_capture_queue_begin();
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		for (i = 0; i < b->req->nmutations; i++)
		{
			process_mutation(b, i, false);
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
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		ReThrowError(edata);
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
	for (i = 0; i < b->req->nmutations; i++)
		if (b->ctxs[i].journaled)
			journal_winner_seq(b->ctxs[i].req->mutation_id);
	return -1;
}

/* Client registry (SPEC §5.11). */
static void
register_client(KzPushReq *req, bool has_client, Datum client_id, bool has_session,
				pg_uuid_t *session, int32 schema_version, const char *last_accepted)
{
	bool		wanted = false;
	pg_uuid_t	uid;
	pg_uuid_t  *u;
	Oid			types[4] = {UUIDOID, UUIDOID, UUIDOID, INT4OID};
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};
	int			i;

	if (!has_client && !has_session)
		return;
	for (i = 0; i < req->ntables && !wanted; i++)
	{
		KzTableConf *c = kz_tableconf_by_name(req->tables[i], true);

		wanted = c != NULL && c->register_clients;
	}
	if (!wanted)
		return;
	if (!kz_caller_uid(&uid))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("kizunasync.push(): a client registration needs an authenticated user"),
				 errdetail("The request carries no JWT sub claim.")));
	values[0] = has_client ? client_id : UUIDPGetDatum(session);
	u = palloc(sizeof(pg_uuid_t));
	memcpy(u, &uid, sizeof(pg_uuid_t));
	values[1] = UUIDPGetDatum(u);
	if (last_accepted)
		values[2] = DirectFunctionCall1(uuid_in, CStringGetDatum(last_accepted));
	else
		nulls[2] = 'n';
	values[3] = Int32GetDatum(schema_version);
	kz_spi_as_owner("INSERT INTO kizunasync.clients AS c"
					" (client_id, user_id, last_mutation_id, schema_version, last_seen)"
					" VALUES ($1, $2, $3, $4, now())"
					" ON CONFLICT (client_id) DO UPDATE SET"
					" last_mutation_id = COALESCE(EXCLUDED.last_mutation_id, c.last_mutation_id),"
					" schema_version = EXCLUDED.schema_version, last_seen = now()"
					" WHERE c.user_id = EXCLUDED.user_id",
					4, types, values, nulls, false, 0);
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("kizunasync.push(): client is registered to another user")));
	/* keep at most 100 registrations per user */
	kz_spi_as_owner("DELETE FROM kizunasync.clients WHERE user_id = $2 AND client_id <> $1"
					" AND client_id NOT IN (SELECT client_id FROM kizunasync.clients"
					"   WHERE user_id = $2 AND client_id <> $1"
					"   ORDER BY last_seen DESC, client_id LIMIT 99)",
					2, types, values, nulls, false, 0);
}

Datum
kz_push(PG_FUNCTION_ARGS)
{
	Jsonb	   *batch = PG_ARGISNULL(0) ? NULL : PG_GETARG_JSONB_P(0);
	bool		sv_null = PG_ARGISNULL(2);
	int32		schema_version = sv_null ? 0 : PG_GETARG_INT32(2);
	bool		has_client = !PG_ARGISNULL(3);
	Datum		client_id = has_client ? PG_GETARG_DATUM(3) : (Datum) 0;
	pg_uuid_t	session;
	bool		has_session;
	char	   *text;
	KzPushReq	req;
	KzReqError	err;
	PushSettings settings;
	BatchState	b;
	Jsonb	   *result;
	Jsonb	   *mutations = NULL;
	const char *last_accepted = NULL;
	int			i;

	/* JWT session id first: a malformed claim fails the call (22P02) */
	has_session = kz_jwt_session_id(&session);

	if (batch != NULL && VARSIZE(batch) > KZ_PUSH_MAX_BODY_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("kizunasync.push(): batch is larger than the request size limit"),
				 errdetail("The limit is %d bytes.", KZ_PUSH_MAX_BODY_BYTES)));
	text = batch ? JsonbToCString(NULL, &batch->root, VARSIZE(batch)) : pstrdup("{}");
	if (!kz_push_parse(text, strlen(text), palloc_fn, NULL, &req, &err))
	{
		kz_push_release(&req);
		raise_request_error(&err);
	}

	table_cache = NULL;
	kz_push_reset_deleted();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "kizunasync.push(): SPI_connect failed");

	read_settings(&settings);

	/* schema gate, before any shape check */
	if (sv_null || schema_version < min_schema_version(&req))
	{
		kz_push_release(&req);
		SPI_finish();
		PG_RETURN_JSONB_P(signal_response());
	}

	if (req.nmutations > settings.max_batch_size)
		ereport(ERROR,
				(errcode(ERRCODE_KZ_PUSH_BATCH_TOO_LARGE),
				 errmsg("kizunasync.push(): batch of %d mutations exceeds max_batch_size %d",
						req.nmutations, settings.max_batch_size)));

	if (!kz_push_validate(&req, palloc_fn, NULL, &err))
		raise_request_error(&err);

	/* table-dependent shape checks, in request order */
	memset(&b, 0, sizeof(b));
	b.req = &req;
	b.batch = batch;
	b.skew_ms = settings.hlc_max_skew_ms;
	b.ctxs = palloc0(sizeof(KzMutationCtx) * (req.nmutations + 1));
	b.verdicts = palloc0(sizeof(KzVerdict) * (req.nmutations + 1));
	if (req.nmutations > 0)
		mutations = kz_jsonb_get(batch, "mutations");
	for (i = 0; i < req.nmutations; i++)
	{
		KzMutationReq *m = &req.mutations[i];
		KzMutationCtx *ctx = &b.ctxs[i];
		int			t;

		ctx->req = m;
		ctx->hlc_skew_ms = settings.hlc_max_skew_ms;
		ctx->mutation = JsonbValueToJsonb(getIthJsonbValueFromContainer(&mutations->root, i));
		ctx->tab = kz_push_table(m->table);
		if (ctx->tab == NULL)
			shape_error(i + 1, psprintf("table \"%s\" is not synced", m->table),
						"Only tables provisioned with kizunasync.sync_table() take pushes.");
		ctx->keyvals = palloc0(sizeof(Datum) * ctx->tab->conf->nkeys);
		if (!kz_rowkey_parse(ctx->tab->conf, m->pk, ctx->keyvals))
			shape_error(i + 1, psprintf("pk is not the canonical key text of table \"%s\"", m->table),
						NULL);
		if (ctx->tab->conf->hlc && m->hlc == NULL)
			shape_error(i + 1, psprintf("table \"%s\" resolves by hlc and the mutation carries no hlc",
										m->table), NULL);
		for (t = 0; t < m->ntransforms; t++)
		{
			KzColumn   *c = kz_push_column(ctx->tab, m->transforms[t].column);

			if (c != NULL && c->is_key)
				shape_error(i + 1, psprintf("transform on \"%s\" targets a key column",
											m->transforms[t].column), NULL);
		}
	}
	for (i = 0; i < req.nmutations; i++)
		if (b.ctxs[i].tab->conf->pull_only)
			ereport(ERROR,
					(errcode(ERRCODE_KZ_PUSH_PULL_ONLY),
					 errmsg("kizunasync.push(): table \"%s\" is pull-only (sync_mode), pushes are rejected",
							req.mutations[i].table)));
	if (settings.require_atomic && !req.atomic)
		ereport(ERROR,
				(errcode(ERRCODE_KZ_PUSH_ATOMIC_REQUIRED),
				 errmsg("kizunasync.push(): require_atomic is set, non-atomic push rejected")));

	if (req.atomic && req.nmutations > 0)
	{
		int			offender = run_atomic(&b);

		if (offender >= 0)
			result = abort_response(&b.verdicts[offender]);
		else
			result = verdicts_response(b.verdicts, req.nmutations);
	}
	else
	{
		for (i = 0; i < req.nmutations; i++)
			process_mutation(&b, i, true);
		result = verdicts_response(b.verdicts, req.nmutations);
	}
	for (i = 0; i < req.nmutations; i++)
		if (b.verdicts[i].applied)
			last_accepted = b.verdicts[i].mutation_id;
	if (req.atomic && result != NULL && kz_jsonb_get(result, "batch") != NULL)
		last_accepted = NULL;
	register_client(&req, has_client, client_id, has_session, &session,
					sv_null ? 0 : schema_version, last_accepted);

	kz_push_release(&req);
	/* the result must outlive SPI_finish */
	result = (Jsonb *) SPI_datumTransfer(JsonbPGetDatum(result), false, -1);
	SPI_finish();
	PG_RETURN_JSONB_P(result);
}
