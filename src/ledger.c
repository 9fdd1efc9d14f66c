/*-------------------------------------------------------------------------
 *
 * ledger.c
 *	  The exactly-once verdict ledger (ledger.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/jsonb.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/uuid.h"

#include "bookkeeping.h"
#include "jsonbutil.h"
#include "ledger.h"
#include "spi.h"

static Datum
ledger_uuid(const char *text)
{
	return DirectFunctionCall1(uuid_in, CStringGetDatum(text));
}

/* The string value of a top-level key of the stored verdict, or NULL. */
static char *
ledger_string(Jsonb *vj, const char *key)
{
	bool		found;

	return kz_jsonb_key_text(vj, key, &found);
}

/* The text of column name of a deformed verdicts tuple, or NULL. */
static char *
ledger_text(KzBkTable *t, const Datum *values, const bool *nulls, const char *name)
{
	int			col = kz_bk_column(t, name);

	return nulls[col] ? NULL : TextDatumGetCString(values[col]);
}

/*
 * The recorded verdict of a mutation id.  Read directly (bookkeeping.c),
 * not with SPI under the transaction's snapshot: the ledger is the
 * extension's, so its lookup sees what has committed by now and takes no
 * predicate lock (two SERIALIZABLE pushes of other rows each read the
 * ledger's index page the other inserted into, and one failed with 40001;
 * test/specs/serializable_pushes.spec, decisions/0086).
 */
bool
kz_ledger_lookup(const char *mutation_id, KzLedgerEntry *e)
{
	KzBkTable	t;
	ScanKeyData key;
	HeapTuple	tup;
	Datum	   *values;
	bool	   *nulls;
	Jsonb	   *vj;
	char	   *verdict;

	memset(e, 0, sizeof(*e));
	kz_bk_open(&t, "verdicts");
	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_UUID_EQ, ledger_uuid(mutation_id));
	tup = kz_bk_fetch(&t, kz_bk_index(&t, "verdicts_pkey"), 1, &key);
	if (tup == NULL)
	{
		kz_bk_close(&t);
		return false;
	}

	/*
	 * Under REPEATABLE READ or SERIALIZABLE, a verdict that a push committed
	 * after this transaction's snapshot cannot be replayed here: the server
	 * row would be rendered without the mutation's effect.  This call fails,
	 * as when it records (kz_ledger_record); its retry replays.
	 */
	if (IsolationUsesXactSnapshot())
	{
		TransactionId xmin = HeapTupleHeaderGetXmin(tup->t_data);

		if (!TransactionIdIsCurrentTransactionId(xmin) &&
			XidInMVCCSnapshot(xmin, GetTransactionSnapshot()))
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("mutation %s was decided by a concurrent push", mutation_id),
					 errhint("Retry the push; the retry answers with the recorded verdict.")));
	}
	values = palloc(sizeof(Datum) * RelationGetDescr(t.heap)->natts);
	nulls = palloc(sizeof(bool) * RelationGetDescr(t.heap)->natts);
	heap_deform_tuple(tup, RelationGetDescr(t.heap), values, nulls);
	e->user_id = ledger_text(&t, values, nulls, "user_id");
	e->table = ledger_text(&t, values, nulls, "table_name");
	e->pk = ledger_text(&t, values, nulls, "pk");
	vj = DatumGetJsonbPCopy(values[kz_bk_column(&t, "verdict")]);
	pfree(values);
	pfree(nulls);
	heap_freetuple(tup);
	kz_bk_close(&t);

	strlcpy(e->verdict.mutation_id, mutation_id, sizeof(e->verdict.mutation_id));
	verdict = ledger_string(vj, "verdict");
	e->verdict.applied = verdict != NULL && strcmp(verdict, "applied") == 0;
	e->verdict.reason = ledger_string(vj, "reason");
	e->verdict.has_server_row = kz_jsonb_has_key(vj, "server_row");
	e->verdict.server_row = NULL;
	if (!e->verdict.applied && e->verdict.reason == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("ledger entry of mutation %s is not a verdict", mutation_id)));
	return true;
}

void
kz_ledger_record(const char *mutation_id, const char *sub, const char *table, const char *pk,
				 const KzVerdict *v)
{
	Oid			types[5] = {UUIDOID, TEXTOID, TEXTOID, TEXTOID, JSONBOID};
	Datum		values[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', ' '};
	KzVerdict	stored = *v;

	stored.server_row = NULL;	/* no row copies in the ledger */
	values[0] = ledger_uuid(mutation_id);
	if (sub)
		values[1] = CStringGetTextDatum(sub);
	else
		nulls[1] = 'n';
	values[2] = CStringGetTextDatum(table);
	values[3] = CStringGetTextDatum(pk);
	values[4] = JsonbPGetDatum(kz_verdict_jsonb(&stored));

	/*
	 * A concurrent push of the same id decided it first (its ledger row
	 * committed while we decided).  This push's effect must not stand: fail
	 * the call; the retry is answered from the ledger.
	 */
	if (kz_spi_priv("INSERT INTO kizunasync.verdicts (mutation_id, user_id, table_name, pk, verdict)"
					" VALUES ($1, $2, $3, $4, $5) ON CONFLICT (mutation_id) DO NOTHING",
					5, types, values, nulls, false, 0, SPI_OK_INSERT) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("mutation %s was decided by a concurrent push", mutation_id),
				 errhint("Retry the push; the retry answers with the recorded verdict.")));
}

uint64
kz_ledger_bound_rejections(const char *sub)
{
	Oid			types[2] = {TEXTOID, INT4OID};
	Datum		values[2];

	values[0] = CStringGetTextDatum(sub);
	values[1] = Int32GetDatum(KZ_LEDGER_MAX_REJECTIONS);

	/*
	 * Newest first through verdicts_user_rejected_idx: the scan reads at most
	 * the quota and the excess.  Rows another transaction holds are left
	 * for a later push.
	 */
	return kz_spi_priv("DELETE FROM kizunasync.verdicts v"
					   " WHERE v.mutation_id OPERATOR(pg_catalog.=) ANY ("
					   "   SELECT x.mutation_id FROM kizunasync.verdicts x"
					   "    WHERE x.user_id OPERATOR(pg_catalog.=) $1 AND x.rejected"
					   "    ORDER BY x.recorded_at DESC OFFSET $2"
					   "    FOR UPDATE SKIP LOCKED)",
					   2, types, values, NULL, false, 0, SPI_OK_DELETE);
}
