/*-------------------------------------------------------------------------
 *
 * capture.c
 *	  Change capture: the row trigger on synced tables, the TRUNCATE guard,
 *	  and the rendering of a row image into changes.
 *
 * kizunasync._capture() is an AFTER INSERT OR UPDATE OR DELETE row trigger
 * (SECURITY INVOKER, enabled ALWAYS).  It renders the row key and the
 * bucket value of the old and new images, as the writer, and turns the
 * write into changes:
 *	 INSERT							entry(new key)
 *	 UPDATE changing nothing		nothing (compared by rendered value)
 *	 UPDATE, same key and bucket	entry(key)
 *	 UPDATE moving the bucket or	tombstone(old key, old bucket), then
 *	   changing the key				entry(new key)
 *	 DELETE							tombstone(key, bucket)
 * Changes are handed to the statement's batch (capture_batch.h), which
 * numbers and records them (kz_stamp_record) when the statement ends, or
 * to the push queue while it is on (capture_queue.h).
 *
 * Replica mode: writes applied by logical replication (a session with a
 * replication origin, or a logical replication worker) are captured; a
 * session that sets session_replication_role = replica by hand (a restore,
 * a backfill) is not, as PostgreSQL skips ordinary triggers for it, and
 * kizunasync.repair_table() reconciles afterwards (decisions/0082).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "replication/origin.h"
#include "replication/worker_internal.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "bucketlabel.h"
#include "capture.h"
#include "capture_batch.h"
#include "identity.h"
#include "rowkey.h"
#include "spi.h"
#include "stamp.h"
#include "tableconf.h"
#include "wakeup.h"

PG_FUNCTION_INFO_V1(kz_capture);
PG_FUNCTION_INFO_V1(kz_refuse_truncate);

/* ---------------------------------------------------------------- rendering */

int
kz_render_settings_begin(void)
{
	static const char *const pins[][2] = {
		{"TimeZone", "UTC"},
		{"DateStyle", "ISO, MDY"},
		{"IntervalStyle", "postgres"},
		{"extra_float_digits", "1"},
		{"bytea_output", "hex"},
	};
	int			level = -1;
	int			i;

	/*
	 * Only settings that differ are pinned: the capture trigger runs per
	 * row, and a GUC nest level per row costs a few percent of a bulk
	 * write.  -1 means nothing to restore.
	 */
	for (i = 0; i < (int) lengthof(pins); i++)
	{
		const char *cur = GetConfigOption(pins[i][0], false, false);

		if (cur != NULL && strcmp(cur, pins[i][1]) == 0)
			continue;
		if (level < 0)
			level = NewGUCNestLevel();
		(void) set_config_option(pins[i][0], pins[i][1], PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	}
	return level;
}

void
kz_render_settings_end(int level)
{
	if (level >= 0)
		AtEOXact_GUC(false, level);
}

/* to_jsonb(value) for a value of type typid, as the current user. */
static Jsonb *
capture_to_jsonb(Datum value, Oid typid)
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

void
kz_capture_image(const KzTableConf *conf, HeapTuple tuple, TupleDesc desc, KzImage *img)
{
	Datum	   *vals = palloc(sizeof(Datum) * conf->nkeys);
	bool	   *nulls = palloc(sizeof(bool) * conf->nkeys);
	int			i;

	for (i = 0; i < conf->nkeys; i++)
		vals[i] = heap_getattr(tuple, conf->key_attnums[i], desc, &nulls[i]);
	img->pk = kz_rowkey_render(conf, vals, nulls);
	img->bucket = "";
	img->bucket_null = false;
	img->bucket_json = NULL;

	if (conf->bucket_attnum != InvalidAttrNumber)
	{
		bool		isnull;
		Datum		d = heap_getattr(tuple, conf->bucket_attnum, desc, &isnull);

		if (isnull)
		{
			img->bucket = NULL;
			img->bucket_null = true;
		}
		else
		{
			Jsonb	   *jb = capture_to_jsonb(d, conf->bucket_type);

			img->bucket = kz_label_of(jb, kz_tableconf_bucket_kind(conf));
			img->bucket_null = (img->bucket == NULL);
			img->bucket_json = JsonbToCString(NULL, &jb->root, VARSIZE(jb));
		}
	}
	kz_stamp_check_lengths(conf->table_name, img->pk, img->bucket);
}

/* {"col": <old value as jsonb>} or {} when unbucketed. */
static char *
capture_bucket_snapshot(const KzTableConf *conf, const KzImage *img)
{
	StringInfoData buf;

	if (conf->bucket_column == NULL)
		return "{}";
	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	escape_json(&buf, conf->bucket_column);
	appendStringInfoString(&buf, ": ");
	appendStringInfoString(&buf, img->bucket_json ? img->bucket_json : "null");
	appendStringInfoChar(&buf, '}');
	return buf.data;
}

void
kz_capture_tombstone_change(KzChange *ch, const KzTableConf *conf, const KzImage *img)
{
	ch->op = 'd';
	ch->tid = conf->id;
	ch->table_name = conf->table_name;
	ch->pk = img->pk;
	ch->bucket_value = img->bucket;	/* NULL for a NULL value: never delivered */
	ch->snapshot = capture_bucket_snapshot(conf, img);
	ch->row_xmin = InvalidTransactionId;
	ch->no_row_elsewhere = false;
}

void
kz_capture_entry_change(KzChange *ch, const KzTableConf *conf, const KzImage *img,
						TransactionId row_xmin)
{
	ch->op = 'u';
	ch->tid = conf->id;
	ch->table_name = conf->table_name;
	ch->pk = img->pk;
	ch->bucket_value = img->bucket;
	ch->snapshot = NULL;
	ch->row_xmin = row_xmin;
	ch->no_row_elsewhere = false;
}

/*
 * Types whose values render differently whenever their bytes differ, so
 * that a byte comparison decides "changed" without rendering, and whose
 * to_jsonb text no setting changes (their output functions read none, and
 * to_jsonb writes date and timestamp in ISO 8601 whatever DateStyle says),
 * so that rendering them needs no pinned settings.
 */
static bool
capture_type_renders_bytes(Oid typid)
{
	switch (getBaseType(typid))
	{
		case BOOLOID:
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case OIDOID:
		case TEXTOID:
		case VARCHAROID:
		case BPCHAROID:
		case UUIDOID:
		case NUMERICOID:
		case DATEOID:
		case TIMESTAMPOID:
			return true;
		default:
			return false;
	}
}

/* capture_pin's "not pinned yet" (kz_render_settings_begin returns >= -1) */
#define CAPTURE_UNPINNED	(-2)

/*
 * Pin the rendering settings before the first rendering that depends on
 * them.  Row keys (uuid, text and integer types, rowkey.c) and the types
 * above render the same under any setting, so a write that renders only
 * those sets no GUC at all: a GUC nest level per captured row costs a few
 * percent of a single-row commit when a setting differs (a server whose
 * TimeZone is not spelled 'UTC').
 */
static void
capture_pin(int *level)
{
	if (*level == CAPTURE_UNPINNED)
		*level = kz_render_settings_begin();
}

/*
 * Does an update change what a pull would deliver?  A column changed when
 * its bytes differ and, for types whose bytes do not decide, when its
 * rendered (to_jsonb) text differs: numeric 2 -> 2.000 is a change, a float
 * written as -0 over 0 is not.
 */
static bool
capture_row_changed(HeapTuple oldtup, HeapTuple newtup, TupleDesc desc, int *level)
{
	int			i;

	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		bool		n1,
					n2;
		Datum		d1,
					d2;
		Jsonb	   *j1,
				   *j2;

		if (att->attisdropped)
			continue;
		d1 = heap_getattr(oldtup, i + 1, desc, &n1);
		d2 = heap_getattr(newtup, i + 1, desc, &n2);
		if (n1 != n2)
			return true;
		if (n1 || datumIsEqual(d1, d2, att->attbyval, att->attlen))
			continue;
		if (att->attlen == -1)
		{
			struct varlena *v1 = PG_DETOAST_DATUM_PACKED(d1);
			struct varlena *v2 = PG_DETOAST_DATUM_PACKED(d2);

			if (VARSIZE_ANY_EXHDR(v1) == VARSIZE_ANY_EXHDR(v2) &&
				memcmp(VARDATA_ANY(v1), VARDATA_ANY(v2), VARSIZE_ANY_EXHDR(v1)) == 0)
				continue;		/* the same bytes, stored differently */
		}
		if (capture_type_renders_bytes(att->atttypid))
			return true;
		capture_pin(level);
		j1 = capture_to_jsonb(d1, att->atttypid);
		j2 = capture_to_jsonb(d2, att->atttypid);
		if (strcmp(JsonbToCString(NULL, &j1->root, VARSIZE(j1)),
				   JsonbToCString(NULL, &j2->root, VARSIZE(j2))) != 0)
			return true;
	}
	return false;
}

/* ---------------------------------------------------------------- trigger */

void
kz_capture_forget_row_hlc(const KzTableConf *conf, const char *pk)
{
	Oid			argtypes[2] = {TEXTOID, TEXTOID};
	Datum		values[2];

	values[0] = CStringGetTextDatum(conf->table_name);
	values[1] = CStringGetTextDatum(pk);
	kz_spi_connect();
	kz_spi_priv("DELETE FROM kizunasync.row_hlc WHERE table_name OPERATOR(pg_catalog.=) $1"
				" AND pk OPERATOR(pg_catalog.=) $2",
				2, argtypes, values, NULL, false, 0, SPI_OK_DELETE);
	kz_spi_finish();
}

/* Is this write one PostgreSQL applies for logical replication? */
static bool
capture_replica_write_captured(void)
{
	if (SessionReplicationRole != SESSION_REPLICATION_ROLE_REPLICA)
		return true;
	return MyLogicalRepWorker != NULL || replorigin_session_origin != InvalidRepOriginId;
}

/* Check the trigger protocol; returns the tuple to hand back. */
static HeapTuple
capture_check_call(FunctionCallInfo fcinfo)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("function \"%s\" was not called by trigger manager", "kizunasync._capture")));
	if (!TRIGGER_FIRED_AFTER(trigdata->tg_event) || !TRIGGER_FIRED_FOR_ROW(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("function \"%s\" must be fired AFTER ... FOR EACH ROW", "kizunasync._capture")));
	if (!TRIGGER_FIRED_BY_INSERT(trigdata->tg_event) &&
		!TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event) &&
		!TRIGGER_FIRED_BY_DELETE(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("function \"%s\" must be fired for INSERT, UPDATE or DELETE", "kizunasync._capture")));
	return TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event) ? trigdata->tg_newtuple
		: trigdata->tg_trigtuple;
}

Datum
kz_capture(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	HeapTuple	result = capture_check_call(fcinfo);
	TupleDesc	desc = RelationGetDescr(trigdata->tg_relation);
	KzTableConf *conf;
	KzImage		oldimg,
				newimg;
	KzChange	changes[2];
	int			n = 0;
	int			level;
	bool		forget_hlc = false;

	if (!capture_replica_write_captured())
		return PointerGetDatum(result);
	conf = kz_tableconf_by_relid(RelationGetRelid(trigdata->tg_relation), true);
	if (conf == NULL)
		return PointerGetDatum(result); /* not (or no longer) synced */

	/*
	 * A crash empties an unlogged table without a tombstone for any of its
	 * rows.  sync_table refuses one; a synced table switched with ALTER
	 * TABLE ... SET UNLOGGED is stopped here, at its first write.
	 */
	if (trigdata->tg_relation->rd_rel->relpersistence != RELPERSISTENCE_PERMANENT)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("synced table \"%s\" is not logged",
						RelationGetRelationName(trigdata->tg_relation)),
				 errdetail("A crash would empty it without recording the deletes."),
				 errhint("Make it logged again with ALTER TABLE ... SET LOGGED, or unsync it.")));

	/* render as the writer (the current user), under the rendering settings */
	kz_entry_trigger(trigdata->tg_trigger->tgfoid);
	level = CAPTURE_UNPINNED;
	if (conf->bucket_attnum != InvalidAttrNumber && !capture_type_renders_bytes(conf->bucket_type))
		capture_pin(&level);
	if (TRIGGER_FIRED_BY_INSERT(trigdata->tg_event))
	{
		kz_capture_image(conf, trigdata->tg_trigtuple, desc, &newimg);
		kz_capture_entry_change(&changes[n++], conf, &newimg,
								HeapTupleHeaderGetRawXmin(trigdata->tg_trigtuple->t_data));
		changes[n - 1].no_row_elsewhere = true; /* a new key: its DELETE left none */
	}
	else if (TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event))
	{
		if (capture_row_changed(trigdata->tg_trigtuple, trigdata->tg_newtuple, desc, &level))
		{
			kz_capture_image(conf, trigdata->tg_trigtuple, desc, &oldimg);
			kz_capture_image(conf, trigdata->tg_newtuple, desc, &newimg);
			if (strcmp(oldimg.pk, newimg.pk) != 0 ||
				oldimg.bucket_null != newimg.bucket_null ||
				(!oldimg.bucket_null && strcmp(oldimg.bucket, newimg.bucket) != 0))
				kz_capture_tombstone_change(&changes[n++], conf, &oldimg);
			kz_capture_entry_change(&changes[n++], conf, &newimg,
									HeapTupleHeaderGetRawXmin(trigdata->tg_newtuple->t_data));
			/* after the tombstone of a move (or of the old key), nothing elsewhere */
			changes[n - 1].no_row_elsewhere = (n == 2);
			forget_hlc = conf->hlc && strcmp(oldimg.pk, newimg.pk) != 0;
		}
	}
	else
	{
		kz_capture_image(conf, trigdata->tg_trigtuple, desc, &oldimg);
		kz_capture_tombstone_change(&changes[n++], conf, &oldimg);
		forget_hlc = conf->hlc;
	}
	kz_render_settings_end(level);	/* nothing to restore when unpinned */

	if (n == 0)
		return PointerGetDatum(result);
	if (forget_hlc)
		kz_capture_forget_row_hlc(conf, oldimg.pk);
	kz_capture_batch_add(changes, n);
	if (conf->wakeup)
		kz_wakeup_note(conf->table_name, conf->relid);
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
				 errmsg("function \"%s\" was not called by trigger manager", "kizunasync._refuse_truncate")));
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot truncate synced table \"%s\"",
					RelationGetRelationName(trigdata->tg_relation)),
			 errdetail("TRUNCATE fires no row triggers, so clients would never learn the rows are gone."),
			 errhint("Use DELETE, or stop syncing the table first with kizunasync.unsync_table().")));
	PG_RETURN_NULL();
}
