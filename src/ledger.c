/*-------------------------------------------------------------------------
 *
 * ledger.c
 *	  The exactly-once verdict ledger (kizunasync.verdicts): one row per
 *	  decided mutation id.  A stored verdict keeps no row copy: its
 *	  server_row is JSON null and push renders the row again on replay.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/uuid.h"

#include "identity.h"
#include "push_internal.h"

static Datum
uuid_datum(const char *text)
{
	return DirectFunctionCall1(uuid_in, CStringGetDatum(text));
}

bool
kz_ledger_lookup(const char *mutation_id, KzLedgerEntry *e)
{
	Oid			types[1] = {UUIDOID};
	Datum		values[1];
	bool		isnull;
	HeapTuple	tup;
	TupleDesc	desc;
	Datum		d;
	Jsonb	   *vj;
	Jsonb	   *x;

	memset(e, 0, sizeof(*e));
	values[0] = uuid_datum(mutation_id);
	kz_spi_as_owner("SELECT user_id, table_name, pk, verdict FROM kizunasync.verdicts"
					" WHERE mutation_id = $1",
					1, types, values, NULL, false, 1);
	if (SPI_processed == 0)
		return false;
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	d = SPI_getbinval(tup, desc, 1, &isnull);
	if (!isnull)
	{
		e->has_user = true;
		memcpy(&e->user_id, DatumGetUUIDP(d), sizeof(pg_uuid_t));
	}
	e->table = SPI_getvalue(tup, desc, 2);
	e->pk = SPI_getvalue(tup, desc, 3);
	d = SPI_getbinval(tup, desc, 4, &isnull);
	vj = DatumGetJsonbPCopy(d);

	strlcpy(e->verdict.mutation_id, mutation_id, sizeof(e->verdict.mutation_id));
	x = kz_jsonb_get(vj, "verdict");
	e->verdict.applied = x != NULL && strcmp(JsonbToCString(NULL, &x->root, 0), "\"applied\"") == 0;
	x = kz_jsonb_get(vj, "reason");
	if (x != NULL)
	{
		char	   *r = JsonbToCString(NULL, &x->root, 0);

		/* stored as a JSON string: strip the quotes */
		if (strlen(r) >= 2)
			e->verdict.reason = pnstrdup(r + 1, strlen(r) - 2);
	}
	e->verdict.has_server_row = kz_jsonb_get(vj, "server_row") != NULL;
	e->verdict.server_row = NULL;
	if (!e->verdict.applied && e->verdict.reason == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("kizunasync.push(): ledger entry of mutation %s is not a verdict",
						mutation_id)));
	return true;
}

void
kz_ledger_record(const char *mutation_id, const char *table, const char *pk,
				 const KzVerdict *v)
{
	Oid			types[5] = {UUIDOID, UUIDOID, TEXTOID, TEXTOID, JSONBOID};
	Datum		values[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', ' '};
	KzVerdict	stored = *v;
	pg_uuid_t	uid;

	stored.server_row = NULL;	/* no row copies in the ledger */
	values[0] = uuid_datum(mutation_id);
	if (kz_caller_uid(&uid))
	{
		pg_uuid_t  *u = palloc(sizeof(pg_uuid_t));

		memcpy(u, &uid, sizeof(pg_uuid_t));
		values[1] = UUIDPGetDatum(u);
	}
	else
		nulls[1] = 'n';
	values[2] = CStringGetTextDatum(table);
	values[3] = CStringGetTextDatum(pk);
	values[4] = JsonbPGetDatum(kz_verdict_jsonb(&stored));
	kz_spi_as_owner("INSERT INTO kizunasync.verdicts (mutation_id, user_id, table_name, pk, verdict)"
					" VALUES ($1, $2, $3, $4, $5) ON CONFLICT (mutation_id) DO NOTHING",
					5, types, values, nulls, false, 0);

	/*
	 * A concurrent push of the same id decided it first (its ledger row
	 * committed while we decided).  This push's effect must not stand: fail
	 * the call; the retry is answered from the ledger.
	 */
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("kizunasync.push(): mutation %s was decided by a concurrent push",
						mutation_id),
				 errhint("Retry the push; the retry answers with the recorded verdict.")));
}
