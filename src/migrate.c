/*-------------------------------------------------------------------------
 *
 * migrate.c
 *	  Bookkeeping of the layout before the entries (0.1.0 and 0.2.0: the tables
 *	  changelog and tombstones) moved into the entries (decisions/0092).
 *
 *	  The update from 0.2.0 (sql/upgrade/0.2.0--0.3.0.pre.sql) moves them in
 *	  one statement each, encoding each row key and bucket label as the
 *	  write path does with two functions that exist only while it runs:
 *
 *	  kizunasync._upgrade_entry_key(table_name text, pk text) RETURNS bytea
 *		(the table name is not used)
 *	  kizunasync._upgrade_bucket(tid integer, label text) RETURNS bigint
 *
 *	  A dump taken on 0.1.0 or 0.2.0 restores into this version: pg_dump
 *	  writes the rows of changelog and tombstones, read-only views now, as
 *	  COPY into them, and before those of synced_tables (it orders table
 *	  data by name).  Their INSTEAD OF trigger (kz_restore_row) holds each row in
 *	  kizunasync.restore_held; kz_restore_claim, a statement trigger on the
 *	  views and on synced_tables, moves every held row whose table is synced
 *	  into the entries, as the update would.  A held row of a table the
 *	  dump does not sync stays held (the update drops such rows): no pull
 *	  can ask for it (the README's upgrade notes say where to look).
 *
 *	  None of them runs any code but PostgreSQL's and the library's own: a
 *	  key's bytes are a function of its text alone (entry_key.c), whatever
 *	  its column's type, and no text is cast.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "entry.h"
#include "spi.h"

PG_FUNCTION_INFO_V1(kz_upgrade_entry_key);
PG_FUNCTION_INFO_V1(kz_upgrade_bucket);
PG_FUNCTION_INFO_V1(kz_restore_row);
PG_FUNCTION_INFO_V1(kz_restore_claim);

Datum
kz_upgrade_entry_key(PG_FUNCTION_ARGS)
{
	/* argument 0, the table's name, is not needed: the key text alone decides */
	PG_RETURN_BYTEA_P(kz_entry_key(text_to_cstring(PG_GETARG_TEXT_PP(1))));
}

Datum
kz_upgrade_bucket(PG_FUNCTION_ARGS)
{
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		PG_RETURN_INT64(KZ_ENTRY_NULL_BUCKET);
	PG_RETURN_INT64(kz_entry_bucket_number(PG_GETARG_INT32(0),
										   text_to_cstring(PG_GETARG_TEXT_PP(1))));
}

/* ------------------------------------------- restoring an older release's dump */

/* The value of column name of the trigger's new row (isnull when missing). */
static Datum
restore_attr(TriggerData *td, const char *name, bool *isnull)
{
	TupleDesc	desc = RelationGetDescr(td->tg_relation);
	int			i;

	for (i = 0; i < desc->natts; i++)
		if (!TupleDescAttr(desc, i)->attisdropped &&
			strcmp(NameStr(TupleDescAttr(desc, i)->attname), name) == 0)
			return heap_getattr(td->tg_trigtuple, i + 1, desc, isnull);
	*isnull = true;
	return (Datum) 0;
}

static void
restore_check_trigger(FunctionCallInfo fcinfo, const char *fname, bool row)
{
	TriggerData *td;

	if (!CALLED_AS_TRIGGER(fcinfo))
		elog(ERROR, "function \"%s\" was not called by trigger manager", fname);
	td = (TriggerData *) fcinfo->context;
	if (row ? !(TRIGGER_FIRED_INSTEAD(td->tg_event) && TRIGGER_FIRED_FOR_ROW(td->tg_event) &&
				TRIGGER_FIRED_BY_INSERT(td->tg_event))
		: !(TRIGGER_FIRED_AFTER(td->tg_event) && TRIGGER_FIRED_FOR_STATEMENT(td->tg_event)))
		elog(ERROR, "function \"%s\" fired for the wrong event", fname);
}

/*
 * kizunasync._restore_row(): INSTEAD OF INSERT on the views changelog and
 * tombstones.  Holds the row; kz_restore_claim moves it.
 */
Datum
kz_restore_row(PG_FUNCTION_ARGS)
{
	TriggerData *td;
	bool		tomb;
	Oid			types[8] = {INT8OID, CHAROID, TEXTOID, TEXTOID, TEXTOID, XIDOID, JSONBOID, TIMESTAMPTZOID};
	Datum		values[8];
	char		nulls[8];
	const char *cols[8] = {"seq", NULL, "table_name", "pk", "bucket_value", "row_xmin",
	"bucket_snapshot", "deleted_at"};
	int			i;

	restore_check_trigger(fcinfo, "kizunasync._restore_row", true);
	td = (TriggerData *) fcinfo->context;
	tomb = strcmp(RelationGetRelationName(td->tg_relation), "tombstones") == 0;
	for (i = 0; i < 8; i++)
	{
		bool		isnull = true;

		values[i] = i == 1 ? CharGetDatum(tomb ? 'd' : 'r') : restore_attr(td, cols[i], &isnull);
		nulls[i] = (i != 1 && isnull) ? 'n' : ' ';
	}
	if (nulls[0] == 'n' || nulls[2] == 'n' || nulls[3] == 'n')
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("a restored row of kizunasync.%s needs seq, table_name and pk",
						RelationGetRelationName(td->tg_relation))));
	kz_spi_connect();
	kz_spi_priv("INSERT INTO kizunasync.restore_held"
				" (seq, kind, table_name, pk, bucket_value, row_xmin, snapshot, deleted_at)"
				" VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
				8, types, values, nulls, false, 0, SPI_OK_INSERT);
	kz_spi_finish();
	return PointerGetDatum(td->tg_trigtuple);
}

/*
 * Move up to 1000 held rows of synced tables into the entries, in seq
 * order; returns how many.
 */
static uint64
restore_claim_chunk(MemoryContext row_cxt)
{
	SPITupleTable *tt;
	uint64		n;
	uint64		i;

	n = kz_spi_priv("SELECT h.seq, h.kind, h.pk, h.bucket_value, h.row_xmin, h.snapshot, h.deleted_at,"
					" s.id,"
					" s.bucket_column IS NOT NULL AND pg_catalog.jsonb_typeof(h.snapshot"
					"   OPERATOR(pg_catalog.->) s.bucket_column) OPERATOR(pg_catalog.=) 'null'"
					" FROM kizunasync.restore_held h JOIN kizunasync.synced_tables s"
					" ON s.table_name OPERATOR(pg_catalog.=) h.table_name ORDER BY h.seq LIMIT 1000",
					0, NULL, NULL, NULL, false, 0, SPI_OK_SELECT);
	tt = SPI_tuptable;
	for (i = 0; i < n; i++)
	{
		MemoryContext old = MemoryContextSwitchTo(row_cxt);
		bool		isnull[9];
		Datum		v[9];
		int			j;
		char	   *label;
		int32		tid;
		bool		tomb;
		Oid			types[8] = {INT8OID, INT8OID, INT4OID, XIDOID, CHAROID, BYTEAOID, TIMESTAMPTZOID, JSONBOID};
		Datum		values[8];
		char		nulls[8] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
		Oid			dtypes[1] = {INT8OID};

		for (j = 0; j < 9; j++)
			v[j] = SPI_getbinval(tt->vals[i], tt->tupdesc, j + 1, &isnull[j]);
		tomb = DatumGetChar(v[1]) == 'd';
		tid = DatumGetInt32(v[7]);
		label = isnull[3] || (tomb && DatumGetBool(v[8])) ? NULL : TextDatumGetCString(v[3]);
		values[0] = v[0];
		values[1] = Int64GetDatum(kz_entry_bucket(tid, label, true));
		values[2] = Int32GetDatum(tid);
		values[3] = v[4];
		nulls[3] = (isnull[4] || tomb) ? 'n' : ' ';
		values[4] = v[1];
		values[5] = PointerGetDatum(kz_entry_key(TextDatumGetCString(v[2])));
		/* a tombstone has its time and snapshot (the tables' defaults), a row entry neither */
		values[6] = isnull[6] ? TimestampTzGetDatum(GetCurrentTransactionStartTimestamp()) : v[6];
		nulls[6] = tomb ? ' ' : 'n';
		values[7] = isnull[5] ? DirectFunctionCall1(jsonb_in, CStringGetDatum("{}")) : v[5];
		nulls[7] = tomb ? ' ' : 'n';
		kz_spi_priv("INSERT INTO kizunasync.entries"
					" (seq, bucket, tid, row_xmin, kind, key, deleted_at, snapshot)"
					" VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
					8, types, values, nulls, false, 0, SPI_OK_INSERT);
		kz_spi_priv("DELETE FROM kizunasync.restore_held WHERE seq OPERATOR(pg_catalog.=) $1",
					1, dtypes, &v[0], NULL, false, 0, SPI_OK_DELETE);
		MemoryContextSwitchTo(old);
		MemoryContextReset(row_cxt);
	}
	SPI_freetuptable(tt);
	return n;
}

/*
 * kizunasync._restore_claim(): AFTER INSERT statement trigger on the views
 * and on synced_tables.  Every held row of a synced table becomes its entry:
 * the same seq, the key and bucket encoded as the write path does; a
 * tombstone's label of a bucketed table whose snapshot holds JSON null is
 * the NULL value, as capture records it.
 */
Datum
kz_restore_claim(PG_FUNCTION_ARGS)
{
	MemoryContext row_cxt;

	restore_check_trigger(fcinfo, "kizunasync._restore_claim", false);
	kz_spi_connect();
	row_cxt = AllocSetContextCreate(CurrentMemoryContext, "kizunasync restore", ALLOCSET_DEFAULT_SIZES);
	while (restore_claim_chunk(row_cxt) > 0)
		CHECK_FOR_INTERRUPTS();
	MemoryContextDelete(row_cxt);
	kz_spi_finish();
	return PointerGetDatum(NULL);
}
