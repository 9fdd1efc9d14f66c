/*-------------------------------------------------------------------------
 *
 * ledger.c
 *	  The exactly-once verdict ledger (ledger.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
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
 * test/specs/serializable_pushes.spec, decisions/0086).  Only the heap and
 * its primary key are opened (the ledger is written with SQL, so its other
 * indexes may have predicates: kz_bk_open() refuses those).
 */
bool
kz_ledger_lookup(const char *mutation_id, KzLedgerEntry *e)
{
	KzBkTable	t;
	Relation	pkey;
	ScanKeyData key;
	HeapTuple	tup;
	Datum	   *values;
	bool	   *nulls;
	char	   *reason;
	int			col;

	memset(e, 0, sizeof(*e));
	memset(&t, 0, sizeof(t));
	t.heap = table_open(kz_bk_relid("verdicts"), AccessShareLock);
	pkey = index_open(kz_bk_relid("verdicts_pkey"), AccessShareLock);
	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_UUID_EQ, ledger_uuid(mutation_id));
	tup = kz_bk_fetch(&t, pkey, 1, &key);
	index_close(pkey, NoLock);
	if (tup == NULL)
	{
		table_close(t.heap, NoLock);
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
	col = kz_bk_column(&t, "server_row");
	if (!nulls[col])
	{
		reason = ledger_text(&t, values, nulls, "reason");
		e->verdict.has_server_row = DatumGetBool(values[col]);
	}
	else
	{
		/* a row from a 0.1.0 dump: the verdict as jsonb */
		Jsonb	   *vj = DatumGetJsonbPCopy(values[kz_bk_column(&t, "verdict")]);
		bool		found;
		char	   *kind = kz_jsonb_key_text(vj, "verdict", &found);

		reason = kind != NULL && strcmp(kind, "applied") == 0 ? NULL :
			kz_jsonb_key_text(vj, "reason", &found);
		e->verdict.has_server_row = kz_jsonb_has_key(vj, "server_row");
		if (kind == NULL || (strcmp(kind, "applied") != 0 && reason == NULL))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("ledger entry of mutation %s is not a verdict", mutation_id)));
	}
	pfree(values);
	pfree(nulls);
	heap_freetuple(tup);
	table_close(t.heap, NoLock);

	strlcpy(e->verdict.mutation_id, mutation_id, sizeof(e->verdict.mutation_id));
	e->verdict.applied = reason == NULL;
	e->verdict.reason = reason;
	e->verdict.server_row = NULL;
	if (!e->verdict.applied && !e->verdict.has_server_row)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("ledger entry of mutation %s is not a verdict", mutation_id),
				 errdetail("It records a rejection without a server_row.")));
	return true;
}

/*
 * The row keeps what a replay answers (decisions/0033): the verdict's kind
 * and reason, whether it carries a server_row, the user it belongs to, and
 * the table and key only when a replay renders the row again.
 */
void
kz_ledger_record(const char *mutation_id, const char *sub, const char *table, const char *pk,
				 const KzVerdict *v)
{
	Oid			types[6] = {UUIDOID, BOOLOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		values[6];
	char		nulls[6] = {' ', ' ', 'n', 'n', 'n', 'n'};

	values[0] = ledger_uuid(mutation_id);
	values[1] = BoolGetDatum(v->has_server_row);
	if (sub)
	{
		values[2] = CStringGetTextDatum(sub);
		nulls[2] = ' ';
	}
	if (!v->applied)
	{
		values[3] = CStringGetTextDatum(v->reason);
		nulls[3] = ' ';
	}
	if (v->has_server_row)
	{
		values[4] = CStringGetTextDatum(table);
		values[5] = CStringGetTextDatum(pk);
		nulls[4] = nulls[5] = ' ';
	}

	/*
	 * A concurrent push of the same id decided it first (its ledger row
	 * committed while we decided).  This push's effect must not stand: fail
	 * the call; the retry is answered from the ledger.
	 */
	if (kz_spi_priv("INSERT INTO kizunasync.verdicts (mutation_id, server_row, user_id, reason, table_name, pk)"
					" VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (mutation_id) DO NOTHING",
					6, types, values, nulls, false, 0, SPI_OK_INSERT) == 0)
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
	 * Newest first through verdicts_user_rejected_idx (rejections only): the
	 * scan reads at most the quota and the excess.  Rows another
	 * transaction holds are left for a later push.
	 */
	return kz_spi_priv("DELETE FROM kizunasync.verdicts v"
					   " WHERE v.mutation_id OPERATOR(pg_catalog.=) ANY ("
					   "   SELECT x.mutation_id FROM kizunasync.verdicts x"
					   "    WHERE x.user_id OPERATOR(pg_catalog.=) $1 AND x.reason IS NOT NULL"
					   "    ORDER BY x.recorded_at DESC OFFSET $2"
					   "    FOR UPDATE SKIP LOCKED)",
					   2, types, values, NULL, false, 0, SPI_OK_DELETE);
}
