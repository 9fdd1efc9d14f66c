/*-------------------------------------------------------------------------
 *
 * migrate.c
 *	  The update from 0.2.0 moves changelog and tombstones into the entries
 *	  (decisions/0092): its SQL (sql/upgrade/0.2.0--0.3.0.pre.sql) encodes
 *	  each row key and bucket label as the write path does, with these two
 *	  functions, which exist only while the update runs.
 *
 *	  kizunasync._upgrade_entry_key(table_name text, pk text) RETURNS bytea
 *	  kizunasync._upgrade_bucket(tid integer, label text) RETURNS bigint
 *
 *	  Neither runs any code but PostgreSQL's and the library's own: the key
 *	  types come from the catalog (tableconf.c), not from casting the text.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"

#include "entry.h"
#include "tableconf.h"

PG_FUNCTION_INFO_V1(kz_upgrade_entry_key);
PG_FUNCTION_INFO_V1(kz_upgrade_bucket);

Datum
kz_upgrade_entry_key(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	char	   *pk = text_to_cstring(PG_GETARG_TEXT_PP(1));
	KzTableConf *conf = kz_tableconf_by_name(name, true);
	Oid			key_type = conf != NULL && conf->nkeys == 1 ? conf->key_types[0] : InvalidOid;

	PG_RETURN_BYTEA_P(kz_entry_key(key_type, pk));
}

Datum
kz_upgrade_bucket(PG_FUNCTION_ARGS)
{
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		PG_RETURN_INT64(KZ_ENTRY_NULL_BUCKET);
	PG_RETURN_INT64(kz_entry_bucket_number(PG_GETARG_INT32(0),
										   text_to_cstring(PG_GETARG_TEXT_PP(1))));
}
