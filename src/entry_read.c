/*-------------------------------------------------------------------------
 *
 * entry_read.c
 *	  The statements that read and remove entries (entry_read.h): what
 *	  push, repair, resync and retention ask of them.  With entry.c,
 *	  the only code that knows their layout (decisions/0092).
 *
 *	  Every statement runs in a privileged section (spi.h), with fixed
 *	  text and values as parameters.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"

#include "entry_read.h"
#include "spi.h"

bytea *
kz_entry_conf_key(const KzTableConf *conf, const char *pk)
{
	return kz_entry_key(pk);
}

/* The label of a bucket number of table tid, or NULL (inside SPI). */
static char *
entry_bucket_label(int32 tid, int64 bucket)
{
	Oid			types[2] = {INT8OID, INT4OID};
	Datum		values[2];
	char	   *label = NULL;

	if (bucket == KZ_ENTRY_NULL_BUCKET)
		return NULL;
	values[0] = Int64GetDatum(bucket);
	values[1] = Int32GetDatum(tid);
	if (kz_spi_priv("SELECT label FROM kizunasync.buckets WHERE id OPERATOR(pg_catalog.=) $1"
					" AND tid OPERATOR(pg_catalog.=) $2 LIMIT 1",
					2, types, values, NULL, false, 1, SPI_OK_SELECT) > 0)
		label = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	SPI_freetuptable(SPI_tuptable);
	return label;
}

/* --------------------------------------- reads of push, repair, resync */

bool
kz_entry_row_of(const KzTableConf *conf, const char *pk, Snapshot snap, char **label,
				TransactionId *row_xmin, int64 *seq)
{
	Oid			types[2] = {INT4OID, BYTEAOID};
	Datum		values[2];
	const char *sql = "SELECT bucket, row_xmin, seq FROM kizunasync.entries"
		" WHERE tid OPERATOR(pg_catalog.=) $1 AND key OPERATOR(pg_catalog.=) $2"
		" AND kind OPERATOR(pg_catalog.=) 'r'";
	uint64		n;
	bool		found = false;

	values[0] = Int32GetDatum(conf->id);
	values[1] = PointerGetDatum(kz_entry_conf_key(conf, pk));
	*label = NULL;
	*row_xmin = InvalidTransactionId;
	*seq = 0;
	if (snap != NULL)
		n = kz_spi_priv_snapshot(sql, 2, types, values, NULL, snap, 1, SPI_OK_SELECT);
	else
		n = kz_spi_priv(sql, 2, types, values, NULL, false, 1, SPI_OK_SELECT);
	if (n > 0)
	{
		SPITupleTable *tt = SPI_tuptable;
		bool		isnull;
		int64		bucket = DatumGetInt64(SPI_getbinval(tt->vals[0], tt->tupdesc, 1, &isnull));
		Datum		d = SPI_getbinval(tt->vals[0], tt->tupdesc, 2, &isnull);

		found = true;
		if (!isnull)
			*row_xmin = DatumGetTransactionId(d);
		*seq = DatumGetInt64(SPI_getbinval(tt->vals[0], tt->tupdesc, 3, &isnull));
		SPI_freetuptable(tt);
		*label = entry_bucket_label(conf->id, bucket);
		if (*label == NULL && conf->bucket_column == NULL)
			*label = pstrdup("");
		return found;
	}
	SPI_freetuptable(SPI_tuptable);
	return found;
}

bool
kz_entry_tombstone_of(const KzTableConf *conf, const char *pk, Snapshot snap, char **label,
					  TransactionId *xmin)
{
	int64		bucket = KZ_ENTRY_NULL_BUCKET;

	*label = NULL;
	*xmin = InvalidTransactionId;
	if (!kz_entry_key_tombstone(conf->id, kz_entry_conf_key(conf, pk), snap, &bucket, xmin))
		return false;
	*label = entry_bucket_label(conf->id, bucket);
	if (*label == NULL)
		*label = pstrdup("");
	return true;
}

int
kz_entry_rows_of_table(const KzTableConf *conf, const bytea *after, int limit, KzEntryRef **out)
{
	Oid			types[3] = {INT4OID, BYTEAOID, INT4OID};
	Datum		values[3];
	uint64		n;
	uint64		i;
	KzEntryRef *refs;
	SPITupleTable *tt;

	values[0] = Int32GetDatum(conf->id);
	if (after == NULL)
	{
		bytea	   *empty = palloc(VARHDRSZ);

		SET_VARSIZE(empty, VARHDRSZ);
		after = empty;			/* keys are never empty */
	}
	values[1] = PointerGetDatum(after);
	values[2] = Int32GetDatum(limit);
	n = kz_spi_priv("SELECT e.key, (SELECT b.label FROM kizunasync.buckets b"
					"          WHERE b.id OPERATOR(pg_catalog.=) e.bucket AND b.tid OPERATOR(pg_catalog.=) e.tid LIMIT 1),"
					" e.ctid, e.bucket"
					" FROM kizunasync.entries e"
					" WHERE e.tid OPERATOR(pg_catalog.=) $1 AND e.key OPERATOR(pg_catalog.>) $2"
					" AND e.kind OPERATOR(pg_catalog.=) 'r'"
					" ORDER BY e.key LIMIT $3",
					3, types, values, NULL, false, 0, SPI_OK_SELECT);
	tt = SPI_tuptable;
	refs = palloc(sizeof(KzEntryRef) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		bool		isnull;
		Datum		d;

		refs[i].key = DatumGetByteaPCopy(SPI_getbinval(tt->vals[i], tt->tupdesc, 1, &isnull));
		refs[i].pk = kz_entry_key_text(refs[i].key);
		d = SPI_getbinval(tt->vals[i], tt->tupdesc, 2, &isnull);
		refs[i].label = isnull ? NULL : TextDatumGetCString(d);
		if (refs[i].label == NULL && conf->bucket_column == NULL)
			refs[i].label = pstrdup("");
		refs[i].tid = *(ItemPointer) DatumGetPointer(SPI_getbinval(tt->vals[i], tt->tupdesc, 3, &isnull));
	}
	SPI_freetuptable(tt);
	*out = refs;
	return (int) n;
}


int
kz_entry_bucket_rows(const KzTableConf *conf, int64 bucket, int64 after, int64 upto, int limit,
					 bool lock, KzEntryBucketRow **out)
{
	Oid			types[5] = {INT8OID, INT4OID, INT8OID, INT8OID, INT4OID};
	Datum		values[5];
	uint64		n;
	uint64		i;
	KzEntryBucketRow *rows;
	SPITupleTable *tt;

	values[0] = Int64GetDatum(bucket);
	values[1] = Int32GetDatum(conf->id);
	values[2] = Int64GetDatum(after);
	values[3] = Int64GetDatum(upto);
	values[4] = Int32GetDatum(limit);
#define BUCKET_ROWS_SQL \
	"SELECT seq, key, row_xmin FROM kizunasync.entries" \
	" WHERE bucket OPERATOR(pg_catalog.=) $1 AND tid OPERATOR(pg_catalog.=) $2" \
	" AND kind OPERATOR(pg_catalog.=) 'r'" \
	" AND seq OPERATOR(pg_catalog.>) $3 AND seq OPERATOR(pg_catalog.<=) $4" \
	" ORDER BY seq LIMIT $5"
	n = kz_spi_priv(lock ? BUCKET_ROWS_SQL " FOR UPDATE" : BUCKET_ROWS_SQL,
					5, types, values, NULL, false, 0, SPI_OK_SELECT);
#undef BUCKET_ROWS_SQL
	tt = SPI_tuptable;
	rows = palloc(sizeof(KzEntryBucketRow) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		bool		isnull;
		Datum		d;

		rows[i].seq = DatumGetInt64(SPI_getbinval(tt->vals[i], tt->tupdesc, 1, &isnull));
		rows[i].pk = kz_entry_key_text(DatumGetByteaPP(SPI_getbinval(tt->vals[i], tt->tupdesc, 2, &isnull)));
		d = SPI_getbinval(tt->vals[i], tt->tupdesc, 3, &isnull);
		rows[i].have_xmin = !isnull;
		rows[i].row_xmin = isnull ? InvalidTransactionId : DatumGetTransactionId(d);
	}
	SPI_freetuptable(tt);
	*out = rows;
	return (int) n;
}

bool
kz_entry_row_seq_exists(int64 seq)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1];
	bool		found;

	values[0] = Int64GetDatum(seq);
	found = kz_spi_priv("SELECT 1 FROM kizunasync.entries WHERE seq OPERATOR(pg_catalog.=) $1"
						" AND kind OPERATOR(pg_catalog.=) 'r'",
						1, types, values, NULL, true, 1, SPI_OK_SELECT) > 0;
	SPI_freetuptable(SPI_tuptable);
	return found;
}

/* The one int8 a max() query returns, 0 for NULL (read_only: SPI's). */
static int64
entry_read_max(const char *sql, int nargs, Oid *types, Datum *values, bool read_only)
{
	bool		isnull = true;
	int64		top = 0;

	if (kz_spi_priv(sql, nargs, types, values, NULL, read_only, 1, SPI_OK_SELECT) > 0)
	{
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull)
			top = DatumGetInt64(d);
	}
	SPI_freetuptable(SPI_tuptable);
	return top;
}

int64
kz_entry_max_tombstone_seq(void)
{
	/* entries_tomb_idx read backward: one index probe */
	return entry_read_max("SELECT pg_catalog.max(seq) FROM kizunasync.entries"
						  " WHERE kind OPERATOR(pg_catalog.=) 'd'", 0, NULL, NULL, false);
}

int64
kz_entry_bucket_max_seq(const KzTableConf *conf, int64 bucket)
{
	Oid			types[2] = {INT8OID, INT4OID};
	Datum		values[2];

	values[0] = Int64GetDatum(bucket);
	values[1] = Int32GetDatum(conf->id);
	return entry_read_max("SELECT pg_catalog.max(seq) FROM kizunasync.entries"
						  " WHERE bucket OPERATOR(pg_catalog.=) $1 AND tid OPERATOR(pg_catalog.=) $2"
						  " AND kind OPERATOR(pg_catalog.=) 'r'", 2, types, values, false);
}

/* ----------------------------------------------------------- retention */

List *
kz_entry_orphan_tables(void)
{
	List	   *tids = NIL;
	uint64		n;
	uint64		i;

	n = kz_spi_priv("WITH RECURSIVE t(id) AS ("
					"  (SELECT x.tid FROM kizunasync.entries x ORDER BY x.tid LIMIT 1)"
					"  UNION ALL"
					"  SELECT (SELECT x.tid FROM kizunasync.entries x"
					"           WHERE x.tid OPERATOR(pg_catalog.>) t.id ORDER BY x.tid LIMIT 1)"
					"    FROM t WHERE t.id IS NOT NULL)"
					" SELECT t.id FROM t WHERE t.id IS NOT NULL"
					"   AND NOT EXISTS (SELECT 1 FROM kizunasync.synced_tables c"
					"                    WHERE c.id OPERATOR(pg_catalog.=) t.id)"
					" ORDER BY t.id",
					0, NULL, NULL, NULL, true, 0, SPI_OK_SELECT);
	for (i = 0; i < n; i++)
	{
		bool		isnull;

		tids = lappend_int(tids, DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i],
															 SPI_tuptable->tupdesc, 1, &isnull)));
	}
	SPI_freetuptable(SPI_tuptable);
	return tids;
}

uint64
kz_entry_remove_table(int32 tid, int64 max_rows)
{
	Oid			types[2] = {INT4OID, INT8OID};
	Datum		values[2];

	values[0] = Int32GetDatum(tid);
	values[1] = Int64GetDatum(max_rows);
	return kz_spi_priv("DELETE FROM kizunasync.entries l"
					   " WHERE l.seq OPERATOR(pg_catalog.=) ANY (SELECT x.seq FROM kizunasync.entries x"
					   "   WHERE x.tid OPERATOR(pg_catalog.=) $1 AND x.kind OPERATOR(pg_catalog.=) 'r'"
					   "   LIMIT $2 FOR UPDATE SKIP LOCKED)",
					   2, types, values, NULL, false, 0, SPI_OK_DELETE);
}

uint64
kz_entry_compact_journal(int32 max_rows)
{
	Oid			types[1] = {INT4OID};
	Datum		values[1];

	values[0] = Int32GetDatum(max_rows);
	return kz_spi_priv("DELETE FROM kizunasync.conflict_journal j"
					   " WHERE j.id OPERATOR(pg_catalog.=) ANY (SELECT x.id FROM kizunasync.conflict_journal x"
					   "   WHERE x.winner_seq IS NOT NULL"
					   "     AND NOT EXISTS (SELECT 1 FROM kizunasync.entries l"
					   "                      WHERE l.seq OPERATOR(pg_catalog.=) x.winner_seq"
					   "                        AND l.kind OPERATOR(pg_catalog.=) 'r')"
					   "   LIMIT $1 FOR UPDATE SKIP LOCKED)",
					   1, types, values, NULL, false, 0, SPI_OK_DELETE);
}

void
kz_entry_forget_table(const char *table_name)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1];

	values[0] = CStringGetTextDatum(table_name);
	kz_spi_priv("DELETE FROM kizunasync.entries WHERE tid OPERATOR(pg_catalog.=)"
				" (SELECT id FROM kizunasync.synced_tables WHERE table_name OPERATOR(pg_catalog.=) $1)",
				1, types, values, NULL, false, 0, SPI_OK_DELETE);
	kz_spi_priv("DELETE FROM kizunasync.buckets WHERE tid OPERATOR(pg_catalog.=)"
				" (SELECT id FROM kizunasync.synced_tables WHERE table_name OPERATOR(pg_catalog.=) $1)",
				1, types, values, NULL, false, 0, SPI_OK_DELETE);
}
