/*-------------------------------------------------------------------------
 *
 * capture.c
 *	  Change capture: the row trigger on synced tables, the TRUNCATE guard,
 *	  the seed of existing rows, and the push queue.
 *
 * kizunasync._capture() is an AFTER INSERT OR UPDATE OR DELETE row trigger
 * (SECURITY DEFINER, search_path and TimeZone pinned).  It renders the row
 * key and the bucket value of the old and new images and turns the write
 * into changes:
 *	 INSERT							entry(new key)
 *	 UPDATE changing nothing		nothing
 *	 UPDATE, same key and bucket	entry(key)
 *	 UPDATE moving the bucket or	tombstone(old key, old bucket), then
 *	   changing the key				entry(new key)
 *	 DELETE							tombstone(key, bucket)
 * Changes are numbered and recorded at once (kz_record_changes), unless the
 * push queue is on, in which case they wait in a backend-local list until
 * push flushes or discards them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/pg_list.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/fmgrprotos.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "kizunasync.h"
#include "capture.h"
#include "rowkey.h"
#include "sequencing.h"
#include "tableconf.h"
#include "wakeup.h"

PG_FUNCTION_INFO_V1(kz_capture);
PG_FUNCTION_INFO_V1(kz_refuse_truncate);
PG_FUNCTION_INFO_V1(kz_seed);

/* ---------------------------------------------------------------- values */

/* to_jsonb(value) for a value of type typid. */
static Jsonb *
kz_to_jsonb(Datum value, Oid typid)
{
	FmgrInfo	flinfo;
	FuncExpr   *expr;

	fmgr_info(F_TO_JSONB, &flinfo);
	expr = makeFuncExpr(F_TO_JSONB, JSONBOID,
						list_make1(makeNullConst(typid, -1, InvalidOid)),
						InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
	flinfo.fn_expr = (Node *) expr;
	return DatumGetJsonbP(FunctionCall1(&flinfo, value));
}

/* doc ->> key semantics for the jsonb of one value: NULL for JSON null. */
static char *
kz_jsonb_text(Jsonb *jb)
{
	JsonbValue	v;

	if (JB_ROOT_IS_SCALAR(jb) && JsonbExtractScalar(&jb->root, &v))
	{
		if (v.type == jbvNull)
			return NULL;
		if (v.type == jbvString)
			return pnstrdup(v.val.string.val, v.val.string.len);
	}
	return JsonbToCString(NULL, &jb->root, VARSIZE(jb));
}

typedef struct KzImage
{
	char	   *pk;
	bool		bucket_null;	/* bucketed table, NULL value */
	char	   *bucket;			/* ->> text; '' when unbucketed; NULL when null */
	Jsonb	   *bucket_json;	/* NULL when unbucketed */
} KzImage;

static void
kz_image(const KzTableConf *conf, HeapTuple tuple, TupleDesc desc, KzImage *img)
{
	Datum	   *vals = palloc(sizeof(Datum) * conf->nkeys);
	bool	   *nulls = palloc(sizeof(bool) * conf->nkeys);
	int			i;

	for (i = 0; i < conf->nkeys; i++)
		vals[i] = heap_getattr(tuple, conf->key_attnums[i], desc, &nulls[i]);
	img->pk = kz_rowkey_render(conf, vals, nulls);

	if (conf->bucket_attnum == InvalidAttrNumber)
	{
		img->bucket = "";
		img->bucket_null = false;
		img->bucket_json = NULL;
	}
	else
	{
		bool		isnull;
		Datum		d = heap_getattr(tuple, conf->bucket_attnum, desc, &isnull);

		if (isnull)
		{
			img->bucket = NULL;
			img->bucket_null = true;
			img->bucket_json = NULL;
		}
		else
		{
			img->bucket_json = kz_to_jsonb(d, conf->bucket_type);
			img->bucket = kz_jsonb_text(img->bucket_json);
			img->bucket_null = (img->bucket == NULL);
		}
	}
}

/* {"col": <old value as jsonb>} or {} when unbucketed. */
static char *
kz_bucket_snapshot(const KzTableConf *conf, const KzImage *img)
{
	StringInfoData buf;

	if (conf->bucket_column == NULL)
		return "{}";
	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	escape_json(&buf, conf->bucket_column);
	appendStringInfoString(&buf, ": ");
	if (img->bucket_json == NULL)
		appendStringInfoString(&buf, "null");
	else
		JsonbToCString(&buf, &img->bucket_json->root, VARSIZE(img->bucket_json));
	appendStringInfoChar(&buf, '}');
	return buf.data;
}

/* Does the update change any column (to_jsonb equality semantics)? */
static bool
kz_row_changed(HeapTuple oldtup, HeapTuple newtup, TupleDesc desc)
{
	int			i;

	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		bool		n1,
					n2;
		Datum		d1,
					d2;

		if (att->attisdropped)
			continue;
		d1 = heap_getattr(oldtup, i + 1, desc, &n1);
		d2 = heap_getattr(newtup, i + 1, desc, &n2);
		if (n1 != n2)
			return true;
		if (n1)
			continue;
		if (datumIsEqual(d1, d2, att->attbyval, att->attlen))
			continue;
		if (!DatumGetBool(DirectFunctionCall2(jsonb_eq,
											  JsonbPGetDatum(kz_to_jsonb(d1, att->atttypid)),
											  JsonbPGetDatum(kz_to_jsonb(d2, att->atttypid)))))
			return true;
	}
	return false;
}

/* ---------------------------------------------------------------- queue */

typedef struct KzQueued
{
	KzChange	change;
	SubTransactionId subid;
} KzQueued;

static bool queue_on = false;
static List *queue = NIL;		/* of KzQueued *, in TopTransactionContext */
static bool xact_callbacks_registered = false;

static void
kz_queue_reset(void)
{
	queue_on = false;
	queue = NIL;				/* memory goes with TopTransactionContext */
}

static void
kz_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PARALLEL_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:
			if (queue != NIL)
				ereport(ERROR,
						(errcode(ERRCODE_INTERNAL_ERROR),
						 errmsg("kizunasync: %d captured changes were neither flushed nor discarded",
								list_length(queue))));
			kz_queue_reset();
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PREPARE:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			kz_queue_reset();
			break;
	}
}

static void
kz_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB && queue != NIL)
	{
		/* drop what the aborted subtransaction (and its children) captured */
		List	   *keep = NIL;
		ListCell   *lc;
		MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);

		foreach(lc, queue)
		{
			KzQueued   *q = lfirst(lc);

			if (q->subid < mySubid)
				keep = lappend(keep, q);
		}
		queue = keep;
		MemoryContextSwitchTo(old);
	}
}

void
kz_capture_xact_init(void)
{
	if (xact_callbacks_registered)
		return;
	RegisterXactCallback(kz_xact_callback, NULL);
	RegisterSubXactCallback(kz_subxact_callback, NULL);
	xact_callbacks_registered = true;
}

static char *
top_strdup(const char *s)
{
	return s ? MemoryContextStrdup(TopTransactionContext, s) : NULL;
}

/* Record the changes now, or queue them when push has queuing on. */
static void
kz_emit(KzChange *changes, int n)
{
	int			i;

	if (!queue_on)
	{
		kz_record_changes(changes, n);
		return;
	}
	for (i = 0; i < n; i++)
	{
		MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
		KzQueued   *q = palloc(sizeof(KzQueued));

		q->change.op = changes[i].op;
		q->change.table_name = top_strdup(changes[i].table_name);
		q->change.pk = top_strdup(changes[i].pk);
		q->change.bucket_value = top_strdup(changes[i].bucket_value);
		q->change.snapshot = top_strdup(changes[i].snapshot);
		q->subid = GetCurrentSubTransactionId();
		queue = lappend(queue, q);
		MemoryContextSwitchTo(old);
	}
}

void
kz_capture_queue_begin(void)
{
	kz_capture_xact_init();
	queue_on = true;
}

void
kz_capture_queue_flush(void)
{
	int			n = list_length(queue);
	KzChange   *arr;
	ListCell   *lc;
	int			i = 0;
	List	   *q = queue;

	if (n == 0)
		return;
	arr = palloc(sizeof(KzChange) * n);
	foreach(lc, q)
		arr[i++] = ((KzQueued *) lfirst(lc))->change;
	/* numbering may fire no trigger of ours, but be safe: recording is direct */
	queue = NIL;
	kz_record_changes(arr, n);
}

void
kz_capture_queue_discard(void)
{
	queue = NIL;
}

void
kz_capture_queue_end(void)
{
	if (queue != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("kizunasync: %d captured changes were neither flushed nor discarded",
						list_length(queue))));
	queue_on = false;
}

char
kz_capture_queued_op(const char *table_name, const char *pk)
{
	char		op = '\0';
	ListCell   *lc;

	foreach(lc, queue)
	{
		KzQueued   *q = lfirst(lc);

		if (strcmp(q->change.table_name, table_name) == 0 &&
			strcmp(q->change.pk, pk) == 0)
			op = q->change.op;
	}
	return op;
}

/* ---------------------------------------------------------------- triggers */

static void
kz_tombstone_change(KzChange *ch, const KzTableConf *conf, const KzImage *img)
{
	ch->op = 'd';
	ch->table_name = conf->table_name;
	ch->pk = img->pk;
	ch->bucket_value = img->bucket ? img->bucket : "";
	ch->snapshot = kz_bucket_snapshot(conf, img);
}

static void
kz_entry_change(KzChange *ch, const KzTableConf *conf, const KzImage *img)
{
	ch->op = 'u';
	ch->table_name = conf->table_name;
	ch->pk = img->pk;
	ch->bucket_value = img->bucket;
	ch->snapshot = NULL;
}

static void
kz_forget_row_hlc(const KzTableConf *conf, const char *pk)
{
	Oid			argtypes[2] = {TEXTOID, TEXTOID};
	Datum		values[2];
	int			ret;

	values[0] = CStringGetTextDatum(conf->table_name);
	values[1] = CStringGetTextDatum(pk);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	ret = SPI_execute_with_args("DELETE FROM kizunasync.row_hlc WHERE table_name = $1 AND pk = $2",
								2, argtypes, values, NULL, false, 0);
	if (ret != SPI_OK_DELETE)
		elog(ERROR, "kizunasync: row_hlc delete failed: %s", SPI_result_code_string(ret));
	SPI_finish();
}

Datum
kz_capture(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	TupleDesc	desc;
	KzTableConf *conf;
	KzImage		oldimg,
				newimg;
	KzChange	changes[2];
	int			n = 0;
	HeapTuple	result;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("kizunasync._capture() was not called by trigger manager")));
	if (!TRIGGER_FIRED_AFTER(trigdata->tg_event) || !TRIGGER_FIRED_FOR_ROW(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("kizunasync._capture() must be fired AFTER ... FOR EACH ROW")));

	kz_capture_xact_init();
	desc = RelationGetDescr(trigdata->tg_relation);
	result = TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event) ? trigdata->tg_newtuple
		: trigdata->tg_trigtuple;

	conf = kz_tableconf_by_relid(RelationGetRelid(trigdata->tg_relation), true);
	if (conf == NULL)
		return PointerGetDatum(result); /* not (or no longer) synced */

	if (TRIGGER_FIRED_BY_INSERT(trigdata->tg_event))
	{
		kz_image(conf, trigdata->tg_trigtuple, desc, &newimg);
		kz_entry_change(&changes[n++], conf, &newimg);
	}
	else if (TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event))
	{
		if (!kz_row_changed(trigdata->tg_trigtuple, trigdata->tg_newtuple, desc))
			return PointerGetDatum(result);
		kz_image(conf, trigdata->tg_trigtuple, desc, &oldimg);
		kz_image(conf, trigdata->tg_newtuple, desc, &newimg);
		if (strcmp(oldimg.pk, newimg.pk) != 0 ||
			oldimg.bucket_null != newimg.bucket_null ||
			(!oldimg.bucket_null && strcmp(oldimg.bucket, newimg.bucket) != 0))
			kz_tombstone_change(&changes[n++], conf, &oldimg);
		kz_entry_change(&changes[n++], conf, &newimg);
		if (conf->hlc && strcmp(oldimg.pk, newimg.pk) != 0)
			kz_forget_row_hlc(conf, oldimg.pk);
	}
	else if (TRIGGER_FIRED_BY_DELETE(trigdata->tg_event))
	{
		kz_image(conf, trigdata->tg_trigtuple, desc, &oldimg);
		kz_tombstone_change(&changes[n++], conf, &oldimg);
		if (conf->hlc)
			kz_forget_row_hlc(conf, oldimg.pk);
	}
	else
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("kizunasync._capture() must be fired for INSERT, UPDATE or DELETE")));

	kz_emit(changes, n);
	if (conf->wakeup)
		kz_wakeup_note(conf->table_name);
	return PointerGetDatum(result);
}

/* BEFORE TRUNCATE statement trigger on synced tables. */
Datum
kz_refuse_truncate(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("kizunasync._refuse_truncate() was not called by trigger manager")));
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("kizunasync: cannot truncate synced table \"%s\"",
					RelationGetRelationName(trigdata->tg_relation)),
			 errdetail("TRUNCATE fires no row triggers, so clients would never learn the rows are gone."),
			 errhint("Use DELETE, or stop syncing the table first with kizunasync.unsync_table().")));
	PG_RETURN_NULL();
}

/* ---------------------------------------------------------------- seed */

#define KZ_SEED_CHUNK 1000

/*
 * kizunasync._seed(tbl regclass) RETURNS bigint
 *
 * Number every existing row of a synced table, in chunks of KZ_SEED_CHUNK
 * rows (each change drawn and recorded inside the fence).  Provisioning
 * calls it right after attaching the triggers: CREATE TRIGGER's lock keeps
 * writers out until provisioning commits, and the scan uses a fresh
 * snapshot, so every committed row is seen exactly once.  The heap is read
 * directly, so attribute numbers match the relation's descriptor even when
 * it has dropped columns.  Returns the row count.
 */
Datum
kz_seed(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	KzTableConf *conf = kz_tableconf_by_relid(relid, false);
	Relation	rel;
	TableScanDesc scan;
	TupleTableSlot *slot;
	Snapshot	snap;
	int64		total = 0;
	MemoryContext chunk_cxt;
	MemoryContext old;
	KzChange   *changes;
	int			n = 0;

	chunk_cxt = AllocSetContextCreate(CurrentMemoryContext, "kizunasync seed",
									  ALLOCSET_DEFAULT_SIZES);
	rel = table_open(relid, AccessShareLock);
	snap = RegisterSnapshot(GetLatestSnapshot());
	scan = table_beginscan(rel, snap, 0, NULL);
	slot = table_slot_create(rel, NULL);

	old = MemoryContextSwitchTo(chunk_cxt);
	changes = palloc(sizeof(KzChange) * KZ_SEED_CHUNK);
	MemoryContextSwitchTo(old);

	for (;;)
	{
		bool		more = table_scan_getnextslot(scan, ForwardScanDirection, slot);

		if (more)
		{
			bool		should_free;
			HeapTuple	tup = ExecFetchSlotHeapTuple(slot, false, &should_free);
			KzImage		img;

			old = MemoryContextSwitchTo(chunk_cxt);
			kz_image(conf, tup, RelationGetDescr(rel), &img);
			kz_entry_change(&changes[n++], conf, &img);
			MemoryContextSwitchTo(old);
			if (should_free)
				heap_freetuple(tup);
		}
		if (n == KZ_SEED_CHUNK || (!more && n > 0))
		{
			kz_record_changes(changes, n);
			total += n;
			n = 0;
			/* keep the array, drop the chunk's strings */
			old = MemoryContextSwitchTo(chunk_cxt);
			MemoryContextReset(chunk_cxt);
			changes = palloc(sizeof(KzChange) * KZ_SEED_CHUNK);
			MemoryContextSwitchTo(old);
		}
		if (!more)
			break;
		CHECK_FOR_INTERRUPTS();
	}

	ExecDropSingleTupleTableSlot(slot);
	table_endscan(scan);
	UnregisterSnapshot(snap);
	table_close(rel, AccessShareLock);
	MemoryContextDelete(chunk_cxt);
	PG_RETURN_INT64(total);
}

/*
 * kizunasync._capture_queue(action text) RETURNS text
 *
 * Test helper (no grants) driving the push queue from SQL: 'begin',
 * 'flush', 'discard', 'end'; returns the number of changes still queued.
 * kizunasync._capture_queued_op(table_name text, pk text) RETURNS text
 * gives kz_capture_queued_op() ('u', 'd' or NULL).
 */
PG_FUNCTION_INFO_V1(kz_capture_queue_sql);
PG_FUNCTION_INFO_V1(kz_capture_queued_op_sql);

Datum
kz_capture_queue_sql(PG_FUNCTION_ARGS)
{
	char	   *action = text_to_cstring(PG_GETARG_TEXT_PP(0));

	if (strcmp(action, "begin") == 0)
		kz_capture_queue_begin();
	else if (strcmp(action, "flush") == 0)
		kz_capture_queue_flush();
	else if (strcmp(action, "discard") == 0)
		kz_capture_queue_discard();
	else if (strcmp(action, "end") == 0)
		kz_capture_queue_end();
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("kizunasync: unknown queue action \"%s\"", action)));
	PG_RETURN_TEXT_P(cstring_to_text(psprintf("%d", list_length(queue))));
}

Datum
kz_capture_queued_op_sql(PG_FUNCTION_ARGS)
{
	char		op = kz_capture_queued_op(text_to_cstring(PG_GETARG_TEXT_PP(0)),
										  text_to_cstring(PG_GETARG_TEXT_PP(1)));

	if (op == '\0')
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text_with_len(&op, 1));
}
