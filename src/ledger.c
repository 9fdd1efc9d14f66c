/*-------------------------------------------------------------------------
 *
 * ledger.c
 *	  The exactly-once verdict ledger (ledger.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/uuid.h"

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

bool
kz_ledger_lookup(const char *mutation_id, KzLedgerEntry *e)
{
	Oid			types[1] = {UUIDOID};
	Datum		values[1];
	bool		isnull;
	HeapTuple	tup;
	TupleDesc	desc;
	Jsonb	   *vj;
	char	   *verdict;

	memset(e, 0, sizeof(*e));
	values[0] = ledger_uuid(mutation_id);
	if (kz_spi_priv("SELECT user_id, table_name, pk, verdict FROM kizunasync.verdicts"
					" WHERE mutation_id OPERATOR(pg_catalog.=) $1",
					1, types, values, NULL, false, 1, SPI_OK_SELECT) == 0)
	{
		SPI_freetuptable(SPI_tuptable);
		return false;
	}
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	e->user_id = SPI_getvalue(tup, desc, 1);
	e->table = SPI_getvalue(tup, desc, 2);
	e->pk = SPI_getvalue(tup, desc, 3);
	vj = DatumGetJsonbPCopy(SPI_getbinval(tup, desc, 4, &isnull));
	SPI_freetuptable(SPI_tuptable);

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
