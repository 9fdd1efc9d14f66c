/*-------------------------------------------------------------------------
 *
 * journal.c
 *	  The conflict journal (journal.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/uuid.h"

#include "entry_read.h"
#include "journal.h"
#include "jsonbutil.h"
#include "spi.h"

static int
journal_cmp_seq(const void *key, const void *elem)
{
	int64		s = *(const int64 *) key;
	int64		e = ((const KzJournalRow *) elem)->seq;

	return (s > e) - (s < e);
}

Jsonb *
kz_journal_conflicts(const KzJournalRow *rows, int n)
{
	Datum	   *seqs = palloc(sizeof(Datum) * Max(n, 1));
	int			nseqs = 0;
	int			i;
	Oid			types[1] = {INT8ARRAYOID};
	Datum		vals[1];
	uint64		r;
	uint64		nres;
	JsonbParseState *ps = NULL;
	JsonbValue *res;
	int			kept = 0;

	for (i = 0; i < n; i++)
		if (rows[i].journaled)
			seqs[nseqs++] = Int64GetDatum(rows[i].seq);
	if (nseqs == 0)
		return NULL;
	vals[0] = PointerGetDatum(construct_array(seqs, nseqs, INT8OID, 8, FLOAT8PASSBYVAL,
											  TYPALIGN_DOUBLE));
	nres = kz_spi_priv("SELECT table_name, pk, winner_seq, column_name, loser_value,"
					   " conflict_mode, winner_mutation_id::pg_catalog.text"
					   " FROM kizunasync.conflict_journal"
					   " WHERE winner_seq OPERATOR(pg_catalog.=) ANY ($1)"
					   " ORDER BY table_name, pk, column_name, id",
					   1, types, vals, NULL, true, 0, SPI_OK_SELECT);

	pushJsonbValue(&ps, WJB_BEGIN_ARRAY, NULL);
	for (r = 0; r < nres; r++)
	{
		HeapTuple	tup = SPI_tuptable->vals[r];
		TupleDesc	td = SPI_tuptable->tupdesc;
		bool		isnull;
		char	   *table = TextDatumGetCString(SPI_getbinval(tup, td, 1, &isnull));
		char	   *pk = TextDatumGetCString(SPI_getbinval(tup, td, 2, &isnull));
		int64		wseq = DatumGetInt64(SPI_getbinval(tup, td, 3, &isnull));
		char	   *col = TextDatumGetCString(SPI_getbinval(tup, td, 4, &isnull));
		Jsonb	   *loser = DatumGetJsonbPCopy(SPI_getbinval(tup, td, 5, &isnull));
		char	   *mode = TextDatumGetCString(SPI_getbinval(tup, td, 6, &isnull));
		char	   *mid = TextDatumGetCString(SPI_getbinval(tup, td, 7, &isnull));
		const KzJournalRow *e;

		e = bsearch(&wseq, rows, n, sizeof(KzJournalRow), journal_cmp_seq);
		if (e == NULL || strcmp(e->table_name, table) != 0 || strcmp(e->pk, pk) != 0)
			continue;
		if (!kz_jsonb_has_key(e->row, col))
			continue;			/* the caller does not see that column */

		pushJsonbValue(&ps, WJB_BEGIN_OBJECT, NULL);
		kz_jsonb_push_kv_string(&ps, "pk", pk);
		kz_jsonb_push_kv_string(&ps, "table", table);
		kz_jsonb_push_kv_string(&ps, "winner_seq", psprintf(INT64_FORMAT, wseq));
		kz_jsonb_push_kv_string(&ps, "column_name", col);
		kz_jsonb_push_kv_jsonb(&ps, "loser_value", loser);
		kz_jsonb_push_kv_string(&ps, "conflict_mode", mode);
		kz_jsonb_push_kv_string(&ps, "winner_mutation_id", mid);
		pushJsonbValue(&ps, WJB_END_OBJECT, NULL);
		kept++;
	}
	SPI_freetuptable(SPI_tuptable);
	res = pushJsonbValue(&ps, WJB_END_ARRAY, NULL);
	return kept > 0 ? JsonbValueToJsonb(res) : NULL;
}

bool
kz_journal_record(const char *table_name, const char *pk, const char *mutation_id,
				  const char *mode, const char **names, int n, Jsonb *prior, Jsonb *after)
{
	Oid			types[7] = {TEXTOID, TEXTOID, UUIDOID, TEXTOID, JSONBOID, TEXTARRAYOID, JSONBOID};
	Datum		values[7];
	char		nulls[7] = {' ', ' ', ' ', ' ', ' ', ' ', ' '};
	Datum	   *cols;
	int			i;
	uint64		done;

	if (prior == NULL || n == 0)
		return false;
	cols = palloc(sizeof(Datum) * n);
	for (i = 0; i < n; i++)
		cols[i] = CStringGetTextDatum(names[i]);
	values[0] = CStringGetTextDatum(table_name);
	values[1] = CStringGetTextDatum(pk);
	values[2] = DirectFunctionCall1(uuid_in, CStringGetDatum(mutation_id));
	values[3] = CStringGetTextDatum(mode);
	values[4] = JsonbPGetDatum(prior);
	values[5] = PointerGetDatum(construct_array(cols, n, TEXTOID, -1, false, TYPALIGN_INT));
	if (after)
		values[6] = JsonbPGetDatum(after);
	else
		nulls[6] = 'n';
	done = kz_spi_priv("INSERT INTO kizunasync.conflict_journal"
					   " (table_name, pk, column_name, loser_value, winner_mutation_id, conflict_mode)"
					   " SELECT $1, $2, e.key, e.value, $3, $4 FROM pg_catalog.jsonb_each($5) e"
					   " WHERE e.key OPERATOR(pg_catalog.=) ANY ($6)"
					   " AND e.value OPERATOR(pg_catalog.<>) 'null'::pg_catalog.jsonb"
					   " AND (($7 OPERATOR(pg_catalog.->) e.key) OPERATOR(pg_catalog.=) e.value) IS NOT TRUE",
					   7, types, values, nulls, false, 0, SPI_OK_INSERT);
	return done > 0;
}

void
kz_journal_winner_seq(const char *mutation_id)
{
	Oid			types[4] = {UUIDOID, INT8OID, TEXTOID, TEXTOID};
	Datum		values[4];
	uint64		n;
	uint64		i;
	char	  **tables;
	char	  **pks;

	/* the rows the mutation's journal names, then each row's entry */
	values[0] = DirectFunctionCall1(uuid_in, CStringGetDatum(mutation_id));
	n = kz_spi_priv("SELECT DISTINCT table_name, pk FROM kizunasync.conflict_journal"
					" WHERE winner_mutation_id OPERATOR(pg_catalog.=) $1 AND winner_seq IS NULL",
					1, types, values, NULL, false, 0, SPI_OK_SELECT);
	tables = palloc(sizeof(char *) * Max(n, 1));
	pks = palloc(sizeof(char *) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		tables[i] = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		pks[i] = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);
	}
	SPI_freetuptable(SPI_tuptable);
	for (i = 0; i < n; i++)
	{
		KzTableConf *conf = kz_tableconf_by_name(tables[i], true);
		char	   *label;
		TransactionId row_xmin;
		int64		seq;

		if (conf == NULL || !kz_entry_row_of(conf, pks[i], NULL, &label, &row_xmin, &seq))
			continue;
		values[1] = Int64GetDatum(seq);
		values[2] = CStringGetTextDatum(tables[i]);
		values[3] = CStringGetTextDatum(pks[i]);
		kz_spi_priv("UPDATE kizunasync.conflict_journal SET winner_seq = $2"
					" WHERE winner_mutation_id OPERATOR(pg_catalog.=) $1 AND winner_seq IS NULL"
					" AND table_name OPERATOR(pg_catalog.=) $3 AND pk OPERATOR(pg_catalog.=) $4",
					4, types, values, NULL, false, 0, SPI_OK_UPDATE);
	}
}
