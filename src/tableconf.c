/*-------------------------------------------------------------------------
 *
 * tableconf.c
 *	  Per-table sync configuration (kizunasync.synced_tables), resolved
 *	  against the catalog and cached per backend.
 *
 * The cache is a hash keyed by relation oid, living in a memory context
 * under CacheMemoryContext.  It is thrown away whole whenever
 *	 - a relcache invalidation names synced_tables (a statement trigger on
 *	   synced_tables, kizunasync._conf_changed(), sends one for every change,
 *	   so other backends see the change once it commits and this backend at
 *	   the next command), or
 *	 - a relcache invalidation names a cached table (ALTER TABLE may have
 *	   moved, renamed or dropped a key or bucket column), or
 *	 - a relcache reset (relid InvalidOid) happens.
 * Lookups read synced_tables with SPI in a privileged section, so they work
 * whatever role the caller runs as.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "commands/trigger.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "bookkeeping.h"
#include "spi.h"
#include "tableconf.h"

typedef struct KzConfEntry
{
	Oid			relid;			/* hash key */
	KzTableConf conf;
} KzConfEntry;

static HTAB *conf_hash = NULL;
static MemoryContext conf_cxt = NULL;
static bool callback_registered = false;
static Oid	synced_tables_relid = InvalidOid;

PG_FUNCTION_INFO_V1(kz_conf_changed);

/*
 * Forget the cache.  Entries handed out earlier in this transaction stay
 * valid until its end (callers may hold a KzTableConf across SPI calls that
 * process invalidations): the old context is reparented under
 * TopTransactionContext instead of being freed at once.
 */
static void
conf_cache_reset(void)
{
	if (conf_cxt != NULL)
	{
		if (IsTransactionState() && TopTransactionContext != NULL)
			MemoryContextSetParent(conf_cxt, TopTransactionContext);
		else
			MemoryContextDelete(conf_cxt);
	}
	conf_cxt = NULL;
	conf_hash = NULL;
	synced_tables_relid = InvalidOid;
}

static void
conf_relcache_callback(Datum arg, Oid relid)
{
	if (conf_hash == NULL)
		return;
	if (!OidIsValid(relid) || relid == synced_tables_relid ||
		hash_search(conf_hash, &relid, HASH_FIND, NULL) != NULL)
		conf_cache_reset();
}

static void
conf_cache_init(void)
{
	HASHCTL		ctl;

	if (!callback_registered)
	{
		CacheRegisterRelcacheCallback(conf_relcache_callback, (Datum) 0);
		callback_registered = true;
	}
	if (conf_hash != NULL)
		return;

	conf_cxt = AllocSetContextCreate(CacheMemoryContext,
									 "kizunasync table config",
									 ALLOCSET_SMALL_SIZES);
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(KzConfEntry);
	ctl.hcxt = conf_cxt;
	conf_hash = hash_create("kizunasync table config", 16, &ctl,
							HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	synced_tables_relid = get_relname_relid("synced_tables",
											get_namespace_oid(KZ_SCHEMA, false));
}

/* Column number of a column of relid; ERROR when it does not exist. */
static AttrNumber
conf_attnum(Oid relid, const char *table_name, const char *colname, const char *what)
{
	AttrNumber	attnum = get_attnum(relid, colname);

	if (attnum == InvalidAttrNumber || attnum < 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("%s column \"%s\" of synced table \"%s\" does not exist",
						what, colname, table_name),
				 errhint("Re-provision the table with kizunasync.sync_table().")));
	return attnum;
}

static char *
spi_text(HeapTuple tup, TupleDesc desc, int col, MemoryContext cxt)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tup, desc, col, &isnull);

	if (isnull)
		return NULL;
	return MemoryContextStrdup(cxt, TextDatumGetCString(d));
}

static char *
cxt_strdup(const char *s)
{
	return s ? MemoryContextStrdup(conf_cxt, s) : NULL;
}

/* Deep copy of a resolved configuration into the cache context. */
static void
conf_copy(KzTableConf *dst, const KzTableConf *src)
{
	int			i;

	*dst = *src;
	dst->table_name = cxt_strdup(src->table_name);
	dst->bucket_column = cxt_strdup(src->bucket_column);
	dst->soft_delete_column = cxt_strdup(src->soft_delete_column);
	dst->key_columns = MemoryContextAlloc(conf_cxt, sizeof(char *) * src->nkeys);
	dst->key_attnums = MemoryContextAlloc(conf_cxt, sizeof(AttrNumber) * src->nkeys);
	dst->key_types = MemoryContextAlloc(conf_cxt, sizeof(Oid) * src->nkeys);
	for (i = 0; i < src->nkeys; i++)
	{
		dst->key_columns[i] = cxt_strdup(src->key_columns[i]);
		dst->key_attnums[i] = src->key_attnums[i];
		dst->key_types[i] = src->key_types[i];
	}
}

/*
 * Read one synced_tables row (by relid or by wire name) and resolve it.
 * Returns NULL when there is none.  The result lives in conf_cxt.
 * The caller has run conf_cache_init().
 */
static KzTableConf *
conf_load(Oid relid, const char *table_name)
{
	KzTableConf *result = NULL;
	Oid			argtype;
	Datum		arg;
	/*
	 * id is 0.3.0's: an update from an older release runs this library
	 * against synced_tables without it until the update adds it.
	 */
	bool		has_id = get_attnum(kz_bk_relid("synced_tables"), "id") != InvalidAttrNumber;
	const char *sql_base = has_id
		? "SELECT table_name, relid::pg_catalog.oid, sync_mode, bucket_column, key_columns, "
		"conflict_mode, conflict_journal, soft_delete_column, "
		"COALESCE(tombstone_ttl_days, 0), min_schema_version, register_clients, wakeup, id "
		"FROM kizunasync.synced_tables WHERE "
		: "SELECT table_name, relid::pg_catalog.oid, sync_mode, bucket_column, key_columns, "
		"conflict_mode, conflict_journal, soft_delete_column, "
		"COALESCE(tombstone_ttl_days, 0), min_schema_version, register_clients, wakeup, 0 "
		"FROM kizunasync.synced_tables WHERE ";
	char	   *sql;
	MemoryContext callercxt = CurrentMemoryContext;	/* SPI's dies at SPI_finish */

	if (OidIsValid(relid))
	{
		sql = psprintf("%srelid OPERATOR(pg_catalog.=) $1", sql_base);
		argtype = REGCLASSOID;
		arg = ObjectIdGetDatum(relid);
	}
	else
	{
		sql = psprintf("%stable_name OPERATOR(pg_catalog.=) $1", sql_base);
		argtype = TEXTOID;
		arg = CStringGetTextDatum(table_name);
	}

	kz_spi_connect();
	/* not read-only: see the configuration written earlier in this command */
	kz_spi_priv(sql, 1, &argtype, &arg, NULL, false, 1, SPI_OK_SELECT);

	if (SPI_processed == 1)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		Oid			rel = DatumGetObjectId(SPI_getbinval(tup, desc, 2, &isnull));
		KzConfEntry *entry;
		KzTableConf local;
		KzTableConf *c = &local;
		char	   *s;
		ArrayType  *keys;
		Datum	   *keyd;
		int			nkeys;
		int			i;
		bool		found;

		memset(c, 0, sizeof(*c));
		c->relid = rel;
		c->table_name = spi_text(tup, desc, 1, callercxt);
		s = spi_text(tup, desc, 3, callercxt);
		c->pull_only = (strcmp(s, "pull-only") == 0);
		c->bucket_column = spi_text(tup, desc, 4, callercxt);
		if (c->bucket_column)
		{
			c->bucket_attnum = conf_attnum(rel, c->table_name, c->bucket_column, "bucket");
			c->bucket_type = get_atttype(rel, c->bucket_attnum);
			c->bucket_kind = kz_label_kind(c->bucket_type);
			c->bucket_kind_fixed = getBaseType(c->bucket_type) < FirstNormalObjectId ||
				c->bucket_kind == KZ_LABEL_CONTAINER;
		}
		else
		{
			c->bucket_attnum = InvalidAttrNumber;
			c->bucket_type = InvalidOid;
			c->bucket_kind = KZ_LABEL_STRING;
			c->bucket_kind_fixed = true;
		}

		keys = DatumGetArrayTypeP(SPI_getbinval(tup, desc, 5, &isnull));
		deconstruct_array(keys, TEXTOID, -1, false, TYPALIGN_INT, &keyd, NULL, &nkeys);
		c->nkeys = nkeys;
		c->key_columns = MemoryContextAlloc(callercxt, sizeof(char *) * nkeys);
		c->key_attnums = MemoryContextAlloc(callercxt, sizeof(AttrNumber) * nkeys);
		c->key_types = MemoryContextAlloc(callercxt, sizeof(Oid) * nkeys);
		for (i = 0; i < nkeys; i++)
		{
			c->key_columns[i] = MemoryContextStrdup(callercxt, TextDatumGetCString(keyd[i]));
			c->key_attnums[i] = conf_attnum(rel, c->table_name, c->key_columns[i], "key");
			c->key_types[i] = getBaseType(get_atttype(rel, c->key_attnums[i]));
		}

		s = spi_text(tup, desc, 6, callercxt);
		c->hlc = (strcmp(s, "hlc") == 0);
		c->conflict_journal = DatumGetBool(SPI_getbinval(tup, desc, 7, &isnull));
		c->soft_delete_column = spi_text(tup, desc, 8, callercxt);
		c->tombstone_ttl_days = DatumGetInt32(SPI_getbinval(tup, desc, 9, &isnull));
		c->min_schema_version = DatumGetInt32(SPI_getbinval(tup, desc, 10, &isnull));
		c->register_clients = DatumGetBool(SPI_getbinval(tup, desc, 11, &isnull));
		c->wakeup = DatumGetBool(SPI_getbinval(tup, desc, 12, &isnull));
		c->id = DatumGetInt32(SPI_getbinval(tup, desc, 13, &isnull));
		if (isnull)
			c->id = 0;

		/*
		 * Enter it only once fully resolved (an ERROR above leaves no entry),
		 * and only after SPI is done: lock acquisition inside SPI may process
		 * invalidations that reset the cache.
		 */
		kz_spi_finish();
		conf_cache_init();
		entry = hash_search(conf_hash, &rel, HASH_ENTER, &found);
		conf_copy(&entry->conf, c);
		return &entry->conf;
	}

	kz_spi_finish();
	return result;
}

KzTableConf *
kz_tableconf_by_relid(Oid relid, bool missing_ok)
{
	KzConfEntry *entry;
	KzTableConf *conf;

	conf_cache_init();
	entry = hash_search(conf_hash, &relid, HASH_FIND, NULL);
	if (entry != NULL)
		return &entry->conf;

	conf = conf_load(relid, NULL);
	if (conf == NULL && !missing_ok)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("table \"%s\" is not synced",
						get_rel_name(relid) ? get_rel_name(relid) : "?")));
	return conf;
}

KzTableConf *
kz_tableconf_by_name(const char *table_name, bool missing_ok)
{
	HASH_SEQ_STATUS status;
	KzConfEntry *entry;
	KzTableConf *conf;

	conf_cache_init();
	hash_seq_init(&status, conf_hash);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		if (strcmp(entry->conf.table_name, table_name) == 0)
		{
			hash_seq_term(&status);
			return &entry->conf;
		}
	}

	conf = conf_load(InvalidOid, table_name);
	if (conf == NULL && !missing_ok)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("table \"%s\" is not synced", table_name)));
	return conf;
}

KzLabelKind
kz_tableconf_bucket_kind(const KzTableConf *c)
{
	return c->bucket_kind_fixed ? c->bucket_kind : kz_label_kind(c->bucket_type);
}

/*
 * kizunasync._conf_changed(): statement trigger on synced_tables.  Sends a
 * relcache invalidation for synced_tables so every backend drops its cached
 * configuration (at our next command, at commit for the others).
 */
Datum
kz_conf_changed(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata;

	if (!CALLED_AS_TRIGGER(fcinfo))
		elog(ERROR, "function \"%s\" was not called by trigger manager", "kizunasync._conf_changed");
	trigdata = (TriggerData *) fcinfo->context;
	CacheInvalidateRelcacheByRelid(RelationGetRelid(trigdata->tg_relation));
	return PointerGetDatum(NULL);
}
