/*-------------------------------------------------------------------------
 *
 * provision.c
 *	  kizunasync.sync_table(), unsync_table(), repair_table(), and the
 *	  sql_drop event trigger that forgets dropped synced tables.
 *
 *	  The caller must own the table (the database owner provisions the
 *	  tables it owns; decisions/0060).  The table is validated against the
 *	  catalog; the capture triggers are created through the catalog as the
 *	  extension owner (no SQL DDL: no event trigger fires, no application
 *	  code runs); the rows are seeded as the table's owner under
 *	  SECURITY_RESTRICTED_OPERATION (reconcile.c); the bookkeeping is
 *	  written in privileged sections.  Re-provisioning is decisions/0013.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_constraint.h"
#include "catalog/pg_index.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/event_trigger.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parse_func.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "bookkeeping.h"
#include "bucketlabel.h"
#include "errors.h"
#include "entry_read.h"
#include "identity.h"
#include "pgcompat.h"
#include "reconcile.h"
#include "retention.h"
#include "rowkey.h"
#include "spi.h"
#include "tableconf.h"

PG_FUNCTION_INFO_V1(kz_sync_table);
PG_FUNCTION_INFO_V1(kz_unsync_table);
PG_FUNCTION_INFO_V1(kz_repair_table);
PG_FUNCTION_INFO_V1(kz_on_sql_drop);

/* The arguments of sync_table, in declaration order. */
typedef struct SyncArgs
{
	Oid			relid;
	char	   *sync_mode;
	char	   *bucket_column;
	int			nkeys;
	char	  **key_columns;
	ArrayType  *key_array;
	char	   *conflict_mode;
	bool		conflict_journal;
	char	   *soft_delete_column;
	bool		ttl_null;
	int32		tombstone_ttl_days;
	int32		min_schema_version;
	bool		register_clients;
	bool		wakeup;
	char	   *table_name;
} SyncArgs;

static char *
provision_text_arg(FunctionCallInfo fcinfo, int n)
{
	return PG_ARGISNULL(n) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(n));
}

/* Refuse unless the caller owns the table (like ALTER TABLE). */
static void
provision_check_owner(Oid relid, const KzCaller *caller)
{
	if (!kz_class_ownercheck(relid, caller->role))
		aclcheck_error(ACLCHECK_NOT_OWNER, get_relkind_objtype(get_rel_relkind(relid)),
					   get_rel_name(relid));
}

static void
provision_read_args(FunctionCallInfo fcinfo, SyncArgs *a)
{
	Datum	   *elems;
	bool	   *nulls;
	int			i;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("tbl must not be null")));
	a->relid = PG_GETARG_OID(0);
	a->sync_mode = provision_text_arg(fcinfo, 1);
	a->bucket_column = provision_text_arg(fcinfo, 2);
	a->nkeys = 0;
	a->key_array = PG_ARGISNULL(3) ? NULL : PG_GETARG_ARRAYTYPE_P(3);
	if (a->key_array != NULL && ARR_NDIM(a->key_array) > 0)
	{
		deconstruct_array(a->key_array, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &a->nkeys);
		a->key_columns = palloc(sizeof(char *) * Max(a->nkeys, 1));
		for (i = 0; i < a->nkeys; i++)
		{
			if (nulls[i])
				ereport(ERROR,
						(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						 errmsg("key_columns must not contain nulls")));
			a->key_columns[i] = TextDatumGetCString(elems[i]);
		}
	}
	a->conflict_mode = provision_text_arg(fcinfo, 4);
	a->conflict_journal = !PG_ARGISNULL(5) && PG_GETARG_BOOL(5);
	a->soft_delete_column = provision_text_arg(fcinfo, 6);
	a->ttl_null = PG_ARGISNULL(7);
	a->tombstone_ttl_days = a->ttl_null ? 0 : PG_GETARG_INT32(7);
	a->min_schema_version = PG_ARGISNULL(8) ? 1 : PG_GETARG_INT32(8);
	a->register_clients = !PG_ARGISNULL(9) && PG_GETARG_BOOL(9);
	a->wakeup = PG_ARGISNULL(10) || PG_GETARG_BOOL(10);
	a->table_name = PG_ARGISNULL(11) ? get_rel_name(a->relid) : provision_text_arg(fcinfo, 11);
}

/*
 * The primary key's columns (index order) and whether it is deferrable (the
 * relcache's primary key is only an immediate one, so read pg_index).
 */
static int
provision_primary_key(Relation rel, char ***cols, bool *deferrable)
{
	List	   *ids = RelationGetIndexList(rel);
	ListCell   *lc;
	int			n = 0;

	*cols = NULL;
	*deferrable = false;
	foreach(lc, ids)
	{
		HeapTuple	tp = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(lc)));
		Form_pg_index idx;
		int			i;

		if (!HeapTupleIsValid(tp))
			elog(ERROR, "cache lookup failed for index %u", lfirst_oid(lc));
		idx = (Form_pg_index) GETSTRUCT(tp);
		if (idx->indisprimary)
		{
			n = idx->indnkeyatts;
			*deferrable = !idx->indimmediate;
			*cols = palloc(sizeof(char *) * n);
			for (i = 0; i < n; i++)
				(*cols)[i] = get_attname(RelationGetRelid(rel), idx->indkey.values[i], false);
		}
		ReleaseSysCache(tp);
	}
	list_free(ids);
	return n;
}

static char *
provision_name_list(char **names, int n)
{
	StringInfoData s;
	int			i;

	initStringInfo(&s);
	appendStringInfoChar(&s, '{');
	for (i = 0; i < n; i++)
		appendStringInfo(&s, "%s%s", i ? "," : "", quote_identifier(names[i]));
	appendStringInfoChar(&s, '}');
	return s.data;
}

static bool
provision_key_type_ok(Oid t)
{
	return t == UUIDOID || t == TEXTOID || t == VARCHAROID || t == INT2OID ||
		t == INT4OID || t == INT8OID;
}

/* Validate the table and the arguments against the catalog (decisions/0013). */
static void
provision_validate(SyncArgs *a)
{
	Relation	rel = table_open(a->relid, AccessShareLock);
	char	  **pk;
	bool		deferrable;
	int			npk;
	const char *named[INDEX_MAX_KEYS + 2];
	int			nnamed = 0;
	int			i,
				j;

	if (rel->rd_rel->relkind != RELKIND_RELATION)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a plain table", RelationGetRelationName(rel)),
				 errhint("Views, foreign and partitioned tables cannot be synced.")));
	/*
	 * A temporary table goes at the end of its session without the sql_drop
	 * event trigger firing, which would leave its bookkeeping and wire name
	 * behind (and its relid free for another relation).
	 */
	if (rel->rd_rel->relpersistence == RELPERSISTENCE_TEMP)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("cannot sync temporary table \"%s\"", RelationGetRelationName(rel)),
				 errdetail("Its session's end drops it without telling the extension.")));

	/*
	 * Crash recovery empties an unlogged table without a tombstone for any
	 * of its rows (devices would keep them for good), and a hot standby
	 * cannot read it.
	 */
	if (rel->rd_rel->relpersistence == RELPERSISTENCE_UNLOGGED)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("cannot sync unlogged table \"%s\"", RelationGetRelationName(rel)),
				 errdetail("A crash empties it without recording the deletes."),
				 errhint("Make it a logged table first: ALTER TABLE ... SET LOGGED.")));
	if (RelationGetNamespace(rel) == get_namespace_oid(KZ_SCHEMA, false))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("cannot sync the bookkeeping table \"%s\"", RelationGetRelationName(rel))));
	if (a->table_name == NULL || a->table_name[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("table_name must not be empty")));
	if (a->sync_mode == NULL ||
		(strcmp(a->sync_mode, "pull-only") != 0 && strcmp(a->sync_mode, "read-write") != 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid sync_mode %s",
						a->sync_mode ? kz_quote_for_message(a->sync_mode, strlen(a->sync_mode), false) : "NULL"),
				 errhint("Use 'read-write' or 'pull-only'.")));
	if (a->conflict_mode == NULL ||
		(strcmp(a->conflict_mode, "arrival") != 0 && strcmp(a->conflict_mode, "hlc") != 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid conflict_mode %s",
						a->conflict_mode ? kz_quote_for_message(a->conflict_mode, strlen(a->conflict_mode), false) : "NULL"),
				 errhint("Use 'arrival' or 'hlc'.")));
	if (!a->ttl_null && a->tombstone_ttl_days < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("tombstone_ttl_days must be at least 1, not %d", a->tombstone_ttl_days)));
	if (a->nkeys == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("key_columns must name the primary key columns")));
	if (a->nkeys > INDEX_MAX_KEYS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("key_columns names more than %d columns", INDEX_MAX_KEYS)));

	/*
	 * The bucket and soft-delete columns must exist; key columns are judged
	 * against the primary key below, whose error names the actual key (the
	 * default key_columns {id} of a table without an "id" column included).
	 */
	if (a->bucket_column)
		named[nnamed++] = a->bucket_column;
	if (a->soft_delete_column)
		named[nnamed++] = a->soft_delete_column;
	for (i = 0; i < nnamed; i++)
		if (get_attnum(a->relid, named[i]) <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("column \"%s\" of table \"%s\" does not exist", named[i],
							RelationGetRelationName(rel))));

	/* the key columns must be exactly the primary key (any order) */
	npk = provision_primary_key(rel, &pk, &deferrable);
	if (npk == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
				 errmsg("table \"%s\" has no primary key", RelationGetRelationName(rel)),
				 errhint("A synced table needs a primary key; key_columns names its columns.")));
	{
		bool		same = npk == a->nkeys;

		for (i = 0; i < a->nkeys && same; i++)
		{
			bool		in_pk = false;

			for (j = 0; j < npk; j++)
				in_pk |= strcmp(pk[j], a->key_columns[i]) == 0;
			for (j = 0; j < i; j++)
				in_pk &= strcmp(a->key_columns[j], a->key_columns[i]) != 0;
			same = in_pk;
		}
		if (!same)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
					 errmsg("key_columns %s are not the primary key of table \"%s\"",
							provision_name_list(a->key_columns, a->nkeys),
							RelationGetRelationName(rel)),
					 errdetail("The primary key is %s.", provision_name_list(pk, npk)),
					 errhint("Pass key_columns => '%s' (every primary-key column exactly once, in any order).",
							 provision_name_list(pk, npk))));
	}
	if (deferrable)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("the primary key of table \"%s\" is deferrable", RelationGetRelationName(rel)),
				 errhint("Row keys rely on an immediately checked primary key.")));
	for (i = 0; i < a->nkeys; i++)
	{
		Oid			t = getBaseType(get_atttype(a->relid, get_attnum(a->relid, a->key_columns[i])));

		if (!provision_key_type_ok(t))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("key column \"%s\" has type %s, which no row key may have",
							a->key_columns[i], format_type_be(t)),
					 errhint("Key columns may be uuid, text, varchar, smallint, integer or bigint.")));
	}

	kz_rowkey_check_collations(rel);
	if (!rel->rd_rel->relrowsecurity)
		ereport(WARNING,
				(errmsg("row level security is not enabled on table \"%s\"",
						RelationGetRelationName(rel)),
				 errdetail("Every role that may SELECT from it pulls every row."),
				 errhint("Enable it with ALTER TABLE ... ENABLE ROW LEVEL SECURITY and add policies.")));
	table_close(rel, NoLock);
}

/*
 * The bucket column's type (decisions/0013).  A value is recorded under a
 * label of its rendering and asked for by the label of a param's
 * rendering; a type whose rendering depends on a setting the pull and the
 * capture do not pin (or on catalog names) could give one value two
 * labels.  Refused when sync_table would record the rows under this
 * column anew; a re-provisioning that keeps the table's key and bucket
 * column (options only) warns instead, as the table keeps syncing either
 * way.
 */
static void
provision_check_bucket_type(const SyncArgs *a, bool keeps_bucket)
{
	AttrNumber	attnum;
	Oid			typid;
	Oid			culprit;
	const char *why;

	if (a->bucket_column == NULL)
		return;
	attnum = get_attnum(a->relid, a->bucket_column);
	typid = get_atttype(a->relid, attnum);
	culprit = kz_label_refused_type(typid, &why);
	if (!OidIsValid(culprit))
		return;
	ereport(keeps_bucket ? WARNING : ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("bucket column \"%s\" of table \"%s\" has type %s, which no bucket column may have",
					a->bucket_column, get_rel_name(a->relid), format_type_be(typid)),
			 culprit == getBaseType(typid)
			 ? errdetail("A value of type %s renders according to %s, which can differ between the writing and the pulling session, so one bucket value could be recorded under one label and asked for under another.",
						 format_type_be(culprit), why)
			 : errdetail("It holds values of type %s, which render according to %s, which can differ between the writing and the pulling session, so one bucket value could be recorded under one label and asked for under another.",
						 format_type_be(culprit), why),
			 keeps_bucket
			 ? errhint("The table keeps syncing as before; choose another bucket column (which records every row again), or unsync it.")
			 : errhint("Bucket by a column of another type, for example a text or numeric column generated from this one.")));
}

/*
 * The bookkeeping rows of one table, all of them; before its synced_tables
 * row goes (the entries are found by the id that row gives the table).
 */
static void
provision_forget(const char *table_name)
{
	static const char *const tables[] = {
		"bucket_grants", "row_hlc", "conflict_journal"
	};
	Oid			types[1] = {TEXTOID};
	Datum		values[1];
	int			i;

	values[0] = CStringGetTextDatum(table_name);
	for (i = 0; i < (int) lengthof(tables); i++)
		kz_spi_priv(psprintf("DELETE FROM kizunasync.%s WHERE table_name OPERATOR(pg_catalog.=) $1",
							 tables[i]),
					1, types, values, NULL, false, 0, SPI_OK_DELETE);
	kz_entry_forget_table(table_name);
}

/*
 * The per-row HLCs of a table that no longer resolves by hlc: arrival mode
 * keeps none, and stamps left behind would outlive their rows (a DELETE in
 * arrival mode does not look for them) and make pushes lose against stale
 * clocks if the table went back to hlc.  retention.c removes any a
 * concurrent push wrote meanwhile.
 */
static void
provision_forget_hlc(const char *table_name)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1];

	values[0] = CStringGetTextDatum(table_name);
	kz_spi_priv("DELETE FROM kizunasync.row_hlc WHERE table_name OPERATOR(pg_catalog.=) $1",
				1, types, values, NULL, false, 0, SPI_OK_DELETE);
}


/* Drop trigger name of relid, when it has one. */
static void
provision_drop_trigger(Oid relid, const char *name)
{
	Oid			tgoid = get_trigger_oid(relid, name, true);
	ObjectAddress trigger;

	if (!OidIsValid(tgoid))
		return;
	ObjectAddressSet(trigger, TriggerRelationId, tgoid);
	performDeletion(&trigger, DROP_RESTRICT, 0);
	CommandCounterIncrement();
}

/* Attach kizunasync.<func>() to relid as trigger name. */
static void
provision_create_trigger(Oid relid, const char *name, const char *func, bool row,
						 int16 timing, int16 events, char fires_when)
{
	CreateTrigStmt *stmt = makeNode(CreateTrigStmt);
	List	   *funcname = list_make2(makeString(KZ_SCHEMA), makeString(pstrdup(func)));

	stmt->trigname = pstrdup(name);
	stmt->relation = makeRangeVar(get_namespace_name(get_rel_namespace(relid)),
								  get_rel_name(relid), -1);
	stmt->funcname = funcname;
	stmt->row = row;
	stmt->timing = timing;
	stmt->events = events;
	(void) CreateTriggerFiringOn(stmt, "kizunasync.sync_table()", relid, InvalidOid,
								 InvalidOid, InvalidOid,
								 LookupFuncName(funcname, 0, NULL, false), InvalidOid,
								 NULL, false, false, fires_when);
	CommandCounterIncrement();
}

/*
 * Drop our triggers from a table, then (when create) attach them again.
 * Done through the catalog rather than with SQL DDL: nothing is parsed or
 * looked up by name in the table's schema, and no event trigger fires (an
 * event trigger would run as the extension owner with the privileged
 * search_path).  As the extension owner, which alone may EXECUTE the
 * trigger functions; creating and dropping a trigger runs no application
 * code.
 */
static void
provision_triggers(Oid relid, bool create)
{
	KzUserSwitch sw;

	kz_priv_begin(&sw);
	provision_drop_trigger(relid, "kizunasync_capture");
	provision_drop_trigger(relid, "kizunasync_no_truncate");
	if (create)
	{
		/*
		 * CreateTrigger takes a lock that keeps writers out until we commit,
		 * so the seed sees a still table.  The capture trigger fires in
		 * replica mode too (logical replication applies are captured;
		 * capture.c decides which replica-mode writes count).
		 */
		provision_create_trigger(relid, "kizunasync_capture", "_capture", true,
								 TRIGGER_TYPE_AFTER,
								 TRIGGER_TYPE_INSERT | TRIGGER_TYPE_UPDATE | TRIGGER_TYPE_DELETE,
								 TRIGGER_FIRES_ALWAYS);
		provision_create_trigger(relid, "kizunasync_no_truncate", "_refuse_truncate", false,
								 TRIGGER_TYPE_BEFORE, TRIGGER_TYPE_TRUNCATE,
								 TRIGGER_FIRES_ON_ORIGIN);
	}
	kz_priv_end(&sw);
}

/*
 * The synced_tables row of relid: its wire name, and whether its key
 * columns or bucket column differ from the new ones (when a is given).
 */
static bool
provision_current(Oid relid, const SyncArgs *a, char **name, bool *rekey)
{
	Oid			types[3] = {REGCLASSOID, TEXTARRAYOID, TEXTOID};
	Datum		values[3];
	char		nulls[3] = {' ', ' ', ' '};
	bool		found;

	values[0] = ObjectIdGetDatum(relid);
	if (a != NULL && a->key_array != NULL)
		values[1] = PointerGetDatum(a->key_array);
	else
		nulls[1] = 'n';
	if (a != NULL && a->bucket_column != NULL)
		values[2] = CStringGetTextDatum(a->bucket_column);
	else
		nulls[2] = 'n';
	found = kz_spi_priv("SELECT table_name,"
						" (key_columns OPERATOR(pg_catalog.=) $2) IS NOT TRUE"
						" OR CASE WHEN bucket_column IS NULL THEN $3 IS NOT NULL"
						"  WHEN $3 IS NULL THEN true"
						"  ELSE bucket_column OPERATOR(pg_catalog.<>) $3 END"
						" FROM kizunasync.synced_tables WHERE relid OPERATOR(pg_catalog.=) $1",
						3, types, values, nulls, false, 1, SPI_OK_SELECT) > 0;
	if (found)
	{
		bool		isnull;

		*name = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		*rekey = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2,
											&isnull));
	}
	SPI_freetuptable(SPI_tuptable);
	return found;
}

/* Insert or update the synced_tables row. */
static void
provision_write_config(const SyncArgs *a, bool update)
{
	Oid			types[12] = {TEXTOID, REGCLASSOID, TEXTOID, TEXTOID, TEXTARRAYOID, TEXTOID,
	BOOLOID, TEXTOID, INT4OID, INT4OID, BOOLOID, BOOLOID};
	Datum		v[12];
	char		n[12];
	int			i;

	for (i = 0; i < 12; i++)
		n[i] = ' ';
	v[0] = CStringGetTextDatum(a->table_name);
	v[1] = ObjectIdGetDatum(a->relid);
	v[2] = CStringGetTextDatum(a->sync_mode);
	if (a->bucket_column)
		v[3] = CStringGetTextDatum(a->bucket_column);
	else
		n[3] = 'n';
	v[4] = PointerGetDatum(a->key_array);
	v[5] = CStringGetTextDatum(a->conflict_mode);
	v[6] = BoolGetDatum(a->conflict_journal);
	if (a->soft_delete_column)
		v[7] = CStringGetTextDatum(a->soft_delete_column);
	else
		n[7] = 'n';
	if (a->ttl_null)
		n[8] = 'n';
	else
		v[8] = Int32GetDatum(a->tombstone_ttl_days);
	v[9] = Int32GetDatum(a->min_schema_version);
	v[10] = BoolGetDatum(a->register_clients);
	v[11] = BoolGetDatum(a->wakeup);
	kz_spi_priv(update
				? "UPDATE kizunasync.synced_tables SET sync_mode = $3, bucket_column = $4,"
				" key_columns = $5, conflict_mode = $6, conflict_journal = $7,"
				" soft_delete_column = $8, tombstone_ttl_days = $9, min_schema_version = $10,"
				" register_clients = $11, wakeup = $12"
				" WHERE relid OPERATOR(pg_catalog.=) $2 AND table_name OPERATOR(pg_catalog.=) $1"
				: "INSERT INTO kizunasync.synced_tables (table_name, relid, sync_mode, bucket_column,"
				" key_columns, conflict_mode, conflict_journal, soft_delete_column,"
				" tombstone_ttl_days, min_schema_version, register_clients, wakeup)"
				" VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
				12, types, v, n, false, 0, update ? SPI_OK_UPDATE : SPI_OK_INSERT);
}

/*
 * kizunasync.sync_table(tbl regclass, sync_mode text DEFAULT 'read-write',
 *   bucket_column text DEFAULT NULL, key_columns text[] DEFAULT '{id}',
 *   conflict_mode text DEFAULT 'arrival', conflict_journal boolean DEFAULT false,
 *   soft_delete_column text DEFAULT NULL, tombstone_ttl_days integer DEFAULT NULL,
 *   min_schema_version integer DEFAULT 1, register_clients boolean DEFAULT false,
 *   wakeup boolean DEFAULT true, table_name text DEFAULT NULL) RETURNS bigint
 *
 * Returns the number of existing rows recorded (0 when a re-provisioning
 * kept the key and bucket, so nothing needed recording again).
 */
static Datum provision_sync_table_body(FunctionCallInfo fcinfo);

Datum
kz_sync_table(PG_FUNCTION_ARGS)
{
	return kz_entry_guarded(fcinfo, "kizunasync.sync_table()", provision_sync_table_body);
}

static Datum
provision_sync_table_body(FunctionCallInfo fcinfo)
{
	KzCaller	caller;
	SyncArgs	a;
	char	   *old_name = NULL;
	bool		reseed = true;
	bool		exists;
	Oid			types[2] = {TEXTOID, REGCLASSOID};
	Datum		values[2];
	int64		seeded = 0;

	kz_entry(fcinfo, "kizunasync.sync_table()", true, &caller);
	provision_read_args(fcinfo, &a);
	provision_check_owner(a.relid, &caller);
	provision_validate(&a);

	kz_spi_connect();
	values[0] = CStringGetTextDatum(a.table_name);
	values[1] = ObjectIdGetDatum(a.relid);
	if (kz_spi_priv("SELECT 1 FROM kizunasync.synced_tables WHERE table_name OPERATOR(pg_catalog.=) $1"
					" AND relid OPERATOR(pg_catalog.<>) $2",
					2, types, values, NULL, false, 1, SPI_OK_SELECT) > 0)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("table name \"%s\" is already used by another synced table", a.table_name),
				 errhint("Pass a different table_name.")));
	/* same key and bucket: configuration only; otherwise start over */
	exists = provision_current(a.relid, &a, &old_name, &reseed);
	if (exists && strcmp(old_name, a.table_name) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table \"%s\" is already synced as \"%s\"", get_rel_name(a.relid), old_name),
				 errhint("Unsync it first to change its table name.")));
	provision_check_bucket_type(&a, exists && !reseed);
	provision_write_config(&a, exists);
	if (exists && strcmp(a.conflict_mode, "hlc") != 0)
		provision_forget_hlc(a.table_name);
	kz_reap_state_init();
	provision_triggers(a.relid, true);
	if (reseed)
	{
		provision_forget(a.table_name);
		seeded = kz_reconcile_seed(kz_tableconf_by_relid(a.relid, false));
	}
	kz_spi_finish();
	PG_RETURN_INT64(seeded);
}

/* kizunasync.unsync_table(tbl regclass) RETURNS void */
static Datum provision_unsync_table_body(FunctionCallInfo fcinfo);

Datum
kz_unsync_table(PG_FUNCTION_ARGS)
{
	return kz_entry_guarded(fcinfo, "kizunasync.unsync_table()", provision_unsync_table_body);
}

static Datum
provision_unsync_table_body(FunctionCallInfo fcinfo)
{
	KzCaller	caller;
	Oid			relid;
	char	   *name;
	bool		rekey;
	Oid			types[1] = {REGCLASSOID};
	Datum		values[1];

	kz_entry(fcinfo, "kizunasync.unsync_table()", true, &caller);
	relid = PG_GETARG_OID(0);
	provision_check_owner(relid, &caller);
	kz_spi_connect();
	if (!provision_current(relid, NULL, &name, &rekey))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table \"%s\" is not synced", get_rel_name(relid))));
	provision_triggers(relid, false);
	provision_forget(name);
	values[0] = ObjectIdGetDatum(relid);
	kz_spi_priv("DELETE FROM kizunasync.synced_tables WHERE relid OPERATOR(pg_catalog.=) $1",
				1, types, values, NULL, false, 0, SPI_OK_DELETE);
	kz_spi_finish();
	PG_RETURN_VOID();
}

/* The capture trigger's state (pg_trigger.tgenabled); '\0' when missing. */
static char
provision_capture_state(Oid relid)
{
	Relation	rel = table_open(relid, AccessShareLock);
	char		state = '\0';
	int			i;

	for (i = 0; rel->trigdesc != NULL && i < rel->trigdesc->numtriggers; i++)
		if (strcmp(rel->trigdesc->triggers[i].tgname, "kizunasync_capture") == 0)
			state = rel->trigdesc->triggers[i].tgenabled;
	table_close(rel, AccessShareLock);
	return state;
}

/*
 * Repair starts by making the capture trigger fire for every write again
 * (ENABLE ALWAYS): ALTER TABLE ... ENABLE TRIGGER ALL after a backfill with
 * the triggers disabled leaves it firing in ordinary sessions only, which
 * silently skips what logical replication applies (decisions/0082).
 */
static void
provision_restore_capture(Oid relid)
{
	char		state = provision_capture_state(relid);

	if (state == TRIGGER_FIRES_ALWAYS)
		return;
	provision_triggers(relid, true);
	ereport(WARNING,
			(errmsg("enabled the capture trigger of synced table \"%s\" again", get_rel_name(relid)),
			 state == TRIGGER_DISABLED
			 ? errdetail("It was disabled, so writes were not captured; this repair records them.")
			 : state == TRIGGER_FIRES_ON_ORIGIN
			 ? errdetail("It fired in ordinary sessions only (ALTER TABLE ... ENABLE TRIGGER), so writes applied by logical replication were not captured; this repair records them.")
			 : state == TRIGGER_FIRES_ON_REPLICA
			 ? errdetail("It fired in replica mode only (ALTER TABLE ... ENABLE REPLICA TRIGGER), so ordinary writes were not captured; this repair records them.")
			 : errdetail("It was missing; this repair records the writes it did not capture."),
			 errhint("Re-enable it with ALTER TABLE ... ENABLE ALWAYS TRIGGER kizunasync_capture, not ENABLE TRIGGER.")));
}

/* kizunasync.repair_table(tbl regclass) RETURNS bigint */
static Datum provision_repair_table_body(FunctionCallInfo fcinfo);

Datum
kz_repair_table(PG_FUNCTION_ARGS)
{
	return kz_entry_guarded(fcinfo, "kizunasync.repair_table()", provision_repair_table_body);
}

static Datum
provision_repair_table_body(FunctionCallInfo fcinfo)
{
	KzCaller	caller;
	Oid			relid;
	KzTableConf *conf;
	int64		n;

	kz_entry(fcinfo, "kizunasync.repair_table()", true, &caller);
	relid = PG_GETARG_OID(0);
	provision_check_owner(relid, &caller);
	kz_spi_connect();
	conf = kz_tableconf_by_relid(relid, true);
	if (conf == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table \"%s\" is not synced", get_rel_name(relid))));
	provision_restore_capture(relid);
	n = kz_reconcile_repair(conf);
	kz_spi_finish();
	PG_RETURN_INT64(n);
}

/*
 * kizunasync._on_sql_drop() event trigger: dropping a synced table forgets
 * its configuration and bookkeeping.  Runs as whoever drops anything (a
 * temporary table, a column of their own table), so the bookkeeping is
 * read and written in privileged sections.
 */
Datum
kz_on_sql_drop(PG_FUNCTION_ARGS)
{
	Oid			nsp;
	uint64		n;
	uint64		i;
	SPITupleTable *tt;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		elog(ERROR, "function \"%s\" was not called by event trigger manager", "kizunasync._on_sql_drop");
	nsp = get_namespace_oid(KZ_SCHEMA, true);
	if (!OidIsValid(nsp) || !OidIsValid(get_relname_relid("synced_tables", nsp)))
		PG_RETURN_NULL();		/* the extension itself is being dropped */

	kz_spi_connect();
	n = kz_spi_priv("SELECT s.table_name FROM kizunasync.synced_tables s"
					" JOIN pg_catalog.pg_event_trigger_dropped_objects() d"
					"   ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass"
					"  AND d.objid OPERATOR(pg_catalog.=) s.relid::pg_catalog.oid"
					"  AND d.objsubid OPERATOR(pg_catalog.=) 0",
					0, NULL, NULL, NULL, false, 0, SPI_OK_SELECT);
	tt = SPI_tuptable;
	for (i = 0; i < n; i++)
	{
		char	   *name = SPI_getvalue(tt->vals[i], tt->tupdesc, 1);
		Oid			types[1] = {TEXTOID};
		Datum		values[1];

		provision_forget(name);
		values[0] = CStringGetTextDatum(name);
		kz_spi_priv("DELETE FROM kizunasync.synced_tables WHERE table_name OPERATOR(pg_catalog.=) $1",
					1, types, values, NULL, false, 0, SPI_OK_DELETE);
	}
	kz_spi_finish();
	PG_RETURN_NULL();
}
