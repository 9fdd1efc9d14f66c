/*-------------------------------------------------------------------------
 *
 * registry.c
 *	  The client registry (registry.h).  One upsert serves pull (cursor)
 *	  and push (last accepted mutation).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/uuid.h"

#include "errors.h"
#include "registry.h"
#include "spi.h"

static void registry_other_user(const pg_uuid_t *client) pg_attribute_noreturn();

static void
registry_other_user(const pg_uuid_t *client)
{
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("client %s is registered to another user",
					DatumGetCString(DirectFunctionCall1(uuid_out, UUIDPGetDatum(client))))));
}

void
kz_registry_touch(const char *sub, const pg_uuid_t *client, int32 schema_version,
				  const text *cursor, bool bootstrap_began, int64 reaped_seq,
				  const char *last_mutation_id)
{
	Oid			types[6] = {UUIDOID, TEXTOID, TEXTOID, UUIDOID, INT4OID, INT8OID};
	Datum		args[6];
	char		nulls[6] = {' ', ' ', ' ', ' ', ' ', ' '};

	kz_require_read_write("the client registry");
	args[0] = UUIDPGetDatum(client);
	args[1] = CStringGetTextDatum(sub);
	if (cursor)
		args[2] = PointerGetDatum(cursor);
	else
		nulls[2] = 'n';
	if (last_mutation_id)
		args[3] = DirectFunctionCall1(uuid_in, CStringGetDatum(last_mutation_id));
	else
		nulls[3] = 'n';
	args[4] = Int32GetDatum(schema_version);
	if (cursor && bootstrap_began)
		args[5] = Int64GetDatum(reaped_seq);
	else
		nulls[5] = 'n';

	/*
	 * The bootstrap horizon changes only when a bootstrap begins: every
	 * page of it, and a page pulled again from an earlier cursor of it, is
	 * judged against the horizon of its beginning.
	 */
	if (kz_spi_priv("INSERT INTO kizunasync.clients AS c"
					" (client_id, user_id, cursor, last_mutation_id, schema_version, last_seen,"
					"  bootstrap_horizon)"
					" VALUES ($1, $2, COALESCE($3, '0'), $4, $5, pg_catalog.now(), $6)"
					" ON CONFLICT (client_id) DO UPDATE"
					" SET cursor = COALESCE($3, c.cursor),"
					"  bootstrap_horizon = COALESCE($6, c.bootstrap_horizon),"
					"  last_mutation_id = COALESCE(EXCLUDED.last_mutation_id, c.last_mutation_id),"
					"  schema_version = EXCLUDED.schema_version, last_seen = EXCLUDED.last_seen"
					" WHERE c.user_id OPERATOR(pg_catalog.=) EXCLUDED.user_id",
					6, types, args, nulls, false, 0, SPI_OK_INSERT) == 0)
		registry_other_user(client);

	/* keep the newest registrations of the user */
	kz_spi_priv("DELETE FROM kizunasync.clients"
				" WHERE user_id OPERATOR(pg_catalog.=) $2"
				" AND client_id OPERATOR(pg_catalog.<>) $1"
				" AND client_id OPERATOR(pg_catalog.<>) ALL (SELECT x.client_id FROM kizunasync.clients x"
				"   WHERE x.user_id OPERATOR(pg_catalog.=) $2"
				"   AND x.client_id OPERATOR(pg_catalog.<>) $1"
				"   ORDER BY x.last_seen DESC, x.client_id"
				"   LIMIT " CppAsString2(KZ_REGISTRY_PER_USER) " OPERATOR(pg_catalog.-) 1)",
				2, types, args, nulls, false, 0, SPI_OK_DELETE);
}

bool
kz_registry_bootstrap_horizon(const char *sub, const pg_uuid_t *client, int64 *horizon)
{
	Oid			types[2] = {UUIDOID, TEXTOID};
	Datum		args[2];
	bool		found = false;

	args[0] = UUIDPGetDatum(client);
	args[1] = CStringGetTextDatum(sub);
	if (kz_spi_priv("SELECT bootstrap_horizon FROM kizunasync.clients"
					" WHERE client_id OPERATOR(pg_catalog.=) $1"
					" AND user_id OPERATOR(pg_catalog.=) $2"
					" AND bootstrap_horizon IS NOT NULL",
					2, types, args, NULL, true, 1, SPI_OK_SELECT) > 0)
	{
		bool		isnull;

		*horizon = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
											   &isnull));
		found = true;
	}
	SPI_freetuptable(SPI_tuptable);
	return found;
}

bool
kz_registry_read(const char *sub, const pg_uuid_t *client, int64 *horizon)
{
	Oid			types[1] = {UUIDOID};
	Datum		args[1];
	bool		known = false;

	args[0] = UUIDPGetDatum(client);
	if (kz_spi_priv("SELECT user_id, bootstrap_horizon FROM kizunasync.clients"
					" WHERE client_id OPERATOR(pg_catalog.=) $1",
					1, types, args, NULL, true, 1, SPI_OK_SELECT) > 0)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		char	   *owner = TextDatumGetCString(SPI_getbinval(tup, desc, 1, &isnull));
		Datum		d = SPI_getbinval(tup, desc, 2, &isnull);

		if (strcmp(owner, sub) != 0)
			registry_other_user(client);
		if (!isnull)
		{
			*horizon = DatumGetInt64(d);
			known = true;
		}
	}
	SPI_freetuptable(SPI_tuptable);
	return known;
}
