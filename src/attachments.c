/*-------------------------------------------------------------------------
 *
 * attachments.c
 *	  attachment_confirm / attachment_metadata / attachment_vacuum: integrity
 *	  metadata (sha256, size, media type) for Supabase Storage objects whose
 *	  key is <owner uuid>/<row key>/<file name>.
 *
 *	  The functions are SECURITY DEFINER because kizunasync.attachments is
 *	  private; every authorization question is answered under the caller's
 *	  own policies: the object must be readable by the caller in
 *	  storage.objects, and the owning row (when a synced table is named) must
 *	  be readable by the caller.  Without Supabase Storage the functions
 *	  raise a clear error instead of failing obscurely.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/uuid.h"

#include "identity.h"
#include "kizunasync.h"
#include "rowkey.h"
#include "tableconf.h"

PG_FUNCTION_INFO_V1(kz_attachment_confirm);
PG_FUNCTION_INFO_V1(kz_attachment_metadata);
PG_FUNCTION_INFO_V1(kz_attachment_vacuum);

#define KZ_MAX_OBJECT_PATH	1024
#define KZ_MAX_BUCKET_ID	256
#define KZ_MAX_MEDIA_TYPE	255

/* A parsed object key: <owner>/<row key>/<rest> */
typedef struct ObjectKey
{
	bool		has_owner;
	pg_uuid_t	owner;
	char	   *row_key;		/* second segment, NULL when absent */
} ObjectKey;

static void
require_storage(const char *fname)
{
	if (!OidIsValid(get_namespace_oid("storage", true)) ||
		!OidIsValid(get_relname_relid("objects", get_namespace_oid("storage", true))))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("kizunasync.%s(): Supabase Storage is not installed in this database", fname),
				 errdetail("The table storage.objects does not exist."),
				 errhint("Attachments keep metadata about Storage objects; enable Supabase Storage first.")));
}

static char *
required_text(FunctionCallInfo fcinfo, int argno, const char *fname, const char *argname,
			  int maxlen)
{
	char	   *s;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("kizunasync.%s(): %s must not be null", fname, argname)));
	s = text_to_cstring(PG_GETARG_TEXT_PP(argno));
	if (s[0] == '\0' || (int) strlen(s) > maxlen)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("kizunasync.%s(): %s must be 1 to %d bytes long", fname, argname, maxlen)));
	return s;
}

/* Canonical lowercase or uppercase hyphenated uuid text (36 characters). */
static bool
looks_like_uuid(const char *s, size_t len)
{
	size_t		i;

	if (len != 36)
		return false;
	for (i = 0; i < len; i++)
	{
		if (i == 8 || i == 13 || i == 18 || i == 23)
		{
			if (s[i] != '-')
				return false;
		}
		else if (!isxdigit((unsigned char) s[i]))
			return false;
	}
	return true;
}

/*
 * Split an object path <owner uuid>/<row key>/<name>.  Returns false when
 * the path has no folder or its first folder is not a uuid.
 */
static bool
parse_object_key(const char *path, ObjectKey *key)
{
	const char *slash1 = strchr(path, '/');
	const char *slash2;
	char	   *owner_text;
	pg_uuid_t  *u;

	memset(key, 0, sizeof(*key));
	if (slash1 == NULL || !looks_like_uuid(path, slash1 - path))
		return false;
	owner_text = pnstrdup(path, slash1 - path);
	u = DatumGetUUIDP(DirectFunctionCall1(uuid_in, CStringGetDatum(owner_text)));
	memcpy(&key->owner, u, sizeof(pg_uuid_t));
	key->has_owner = true;
	slash2 = strchr(slash1 + 1, '/');
	if (slash2 != NULL && slash2 > slash1 + 1)
		key->row_key = pnstrdup(slash1 + 1, slash2 - slash1 - 1);
	return true;
}

static char *
uuid_text(const pg_uuid_t *u)
{
	return DatumGetCString(DirectFunctionCall1(uuid_out, UUIDPGetDatum((pg_uuid_t *) u)));
}

static pg_uuid_t
require_caller(const char *fname)
{
	pg_uuid_t	uid;

	if (!kz_caller_uid(&uid))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("kizunasync.%s() needs an authenticated caller", fname),
				 errdetail("The request carries no JWT \"sub\" claim.")));
	return uid;
}

/*
 * May the caller read storage object (bucket, path) under its own policies?
 * When owned_by is given, the object must also have been uploaded by that
 * user (storage.objects.owner_id, or the older owner column).
 */
static bool
caller_sees_object(const char *bucket, const char *path, const pg_uuid_t *owned_by)
{
	KzAsCaller	save;
	Oid			argtypes[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		values[3];
	char		nulls[3] = {' ', ' ', ' '};
	int			rc;

	values[0] = CStringGetTextDatum(bucket);
	values[1] = CStringGetTextDatum(path);
	if (owned_by != NULL)
		values[2] = CStringGetTextDatum(uuid_text(owned_by));
	else
	{
		values[2] = (Datum) 0;
		nulls[2] = 'n';
	}
	kz_as_caller_begin(&save);
	rc = SPI_execute_with_args("SELECT 1 FROM storage.objects o"
							   " WHERE o.bucket_id = $1 AND o.name = $2"
							   "   AND ($3 IS NULL OR coalesce(o.owner_id, o.owner::text) = $3)",
							   3, argtypes, values, nulls, true, 1);
	kz_as_caller_end(&save);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "kizunasync: could not read storage.objects");
	return SPI_processed > 0;
}

/* Does storage object (bucket, path) exist at all (no RLS)? */
static bool
object_exists(const char *bucket, const char *path)
{
	Oid			argtypes[2] = {TEXTOID, TEXTOID};
	Datum		values[2];

	values[0] = CStringGetTextDatum(bucket);
	values[1] = CStringGetTextDatum(path);
	if (SPI_execute_with_args("SELECT 1 FROM storage.objects o WHERE o.bucket_id = $1 AND o.name = $2",
							  2, argtypes, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "kizunasync: could not read storage.objects");
	return SPI_processed > 0;
}

/* May the caller read the row of synced table conf whose key text is row_key? */
static bool
caller_sees_row(const KzTableConf *conf, const char *row_key)
{
	Datum	   *values = palloc(sizeof(Datum) * conf->nkeys);
	StringInfoData sql;
	KzAsCaller	save;
	int			rc;
	int			i;

	if (row_key == NULL || !kz_rowkey_parse(conf, row_key, values))
		return false;
	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT 1 FROM %s WHERE ",
					 quote_qualified_identifier(get_namespace_name(get_rel_namespace(conf->relid)),
												get_rel_name(conf->relid)));
	for (i = 0; i < conf->nkeys; i++)
		appendStringInfo(&sql, "%s%s = $%d", i > 0 ? " AND " : "",
						 quote_identifier(conf->key_columns[i]), i + 1);
	kz_as_caller_begin(&save);
	rc = SPI_execute_with_args(sql.data, conf->nkeys, conf->key_types, values, NULL, true, 1);
	kz_as_caller_end(&save);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "kizunasync: could not read the owning row");
	return SPI_processed > 0;
}

static bool
valid_sha256(const char *s)
{
	int			i;

	for (i = 0; s[i] != '\0'; i++)
		if (!isxdigit((unsigned char) s[i]))
			return false;
	return i == 64;
}

/*
 * attachment_confirm(p_bucket, p_path, p_sha256, p_size, p_media_type,
 *					  p_table DEFAULT NULL) RETURNS void
 *
 * Records (or re-confirms) the metadata of an object the caller uploaded.
 * Once a row carries a hash, its hash, size and media type never change; a
 * matching re-confirm refreshes updated_at and may fill a missing table.
 */
Datum
kz_attachment_confirm(PG_FUNCTION_ARGS)
{
	const char *fname = "attachment_confirm";
	char	   *bucket;
	char	   *path;
	char	   *sha;
	int64		size;
	char	   *media_type = NULL;
	char	   *table_name = NULL;
	KzTableConf *conf = NULL;
	ObjectKey	key;
	pg_uuid_t	uid;
	Oid			argtypes[7] = {TEXTOID, TEXTOID, TEXTOID, INT8OID, TEXTOID, UUIDOID, TEXTOID};
	Datum		values[7];
	char		nulls[7] = {' ', ' ', ' ', ' ', ' ', ' ', ' '};
	int			i;

	require_storage(fname);
	bucket = required_text(fcinfo, 0, fname, "p_bucket", KZ_MAX_BUCKET_ID);
	path = required_text(fcinfo, 1, fname, "p_path", KZ_MAX_OBJECT_PATH);
	if (!parse_object_key(path, &key))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("kizunasync.%s(): malformed object path \"%s\"", fname, path),
				 errhint("Object keys are <owner uuid>/<row key>/<file name>.")));
	if (PG_ARGISNULL(2) ||
		!valid_sha256((sha = text_to_cstring(PG_GETARG_TEXT_PP(2)))))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("kizunasync.%s(): sha256 must be 64 hexadecimal characters", fname)));
	for (i = 0; sha[i]; i++)
		sha[i] = pg_ascii_tolower((unsigned char) sha[i]);
	if (PG_ARGISNULL(3) || (size = PG_GETARG_INT64(3)) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("kizunasync.%s(): size must be zero or more", fname)));
	if (!PG_ARGISNULL(4))
	{
		media_type = text_to_cstring(PG_GETARG_TEXT_PP(4));
		if ((int) strlen(media_type) > KZ_MAX_MEDIA_TYPE)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("kizunasync.%s(): media type is longer than %d bytes", fname,
							KZ_MAX_MEDIA_TYPE)));
	}
	if (!PG_ARGISNULL(5))
	{
		table_name = text_to_cstring(PG_GETARG_TEXT_PP(5));
		conf = kz_tableconf_by_name(table_name, true);
		if (conf == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("kizunasync.%s(): table \"%s\" is not synced", fname, table_name)));
	}
	uid = require_caller(fname);
	if (memcmp(&uid, &key.owner, sizeof(pg_uuid_t)) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("kizunasync.%s(): the caller is not the owner of \"%s\"", fname, path),
				 errdetail("The object key names owner %s.", uuid_text(&key.owner))));

	SPI_connect();
	if (!caller_sees_object(bucket, path, &uid))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("kizunasync.%s(): the caller has uploaded no object \"%s\" in bucket \"%s\" that it may read",
						fname, path, bucket)));
	if (conf != NULL && !caller_sees_row(conf, key.row_key))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("kizunasync.%s(): the caller may not read the row of table \"%s\" that owns \"%s\"",
						fname, table_name, path)));

	values[0] = CStringGetTextDatum(bucket);
	values[1] = CStringGetTextDatum(path);
	values[2] = CStringGetTextDatum(sha);
	values[3] = Int64GetDatum(size);
	if (media_type)
		values[4] = CStringGetTextDatum(media_type);
	else
		nulls[4] = 'n';
	values[5] = UUIDPGetDatum(&uid);
	if (table_name)
		values[6] = CStringGetTextDatum(table_name);
	else
		nulls[6] = 'n';
	if (SPI_execute_with_args("INSERT INTO kizunasync.attachments AS a"
							  " (bucket_id, object_path, sha256, size, media_type, created_by, table_name)"
							  " VALUES ($1, $2, $3, $4, $5, $6, $7)"
							  " ON CONFLICT (bucket_id, object_path) DO UPDATE"
							  "   SET sha256 = excluded.sha256, size = excluded.size,"
							  "       media_type = excluded.media_type,"
							  "       table_name = coalesce(a.table_name, excluded.table_name),"
							  "       updated_at = pg_catalog.now()"
							  " WHERE a.created_by = excluded.created_by"
							  "   AND (a.sha256 IS NULL OR (a.sha256 = excluded.sha256"
							  "        AND a.size IS NOT DISTINCT FROM excluded.size"
							  "        AND a.media_type IS NOT DISTINCT FROM excluded.media_type))",
							  7, argtypes, values, nulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "kizunasync: could not record attachment metadata");
	if (SPI_processed != 1)
	{
		bool		isnull;
		Datum		owner;

		if (SPI_execute_with_args("SELECT created_by FROM kizunasync.attachments"
								  " WHERE bucket_id = $1 AND object_path = $2",
								  2, argtypes, values, NULL, true, 1) != SPI_OK_SELECT ||
			SPI_processed != 1)
			elog(ERROR, "kizunasync: attachment metadata row vanished");
		owner = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
		if (memcmp(DatumGetUUIDP(owner), &uid, sizeof(pg_uuid_t)) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("kizunasync.%s(): \"%s\" is registered to another user", fname, path)));
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("kizunasync.%s(): \"%s\" is already confirmed with other metadata", fname, path),
				 errdetail("The hash, size and media type of a confirmed object never change."),
				 errhint("Upload changed content under a new object key.")));
	}
	SPI_finish();
	PG_RETURN_VOID();
}

/*
 * attachment_metadata(p_bucket_id, p_object_path)
 *	 RETURNS TABLE(sha256, size, media_type, created_at, updated_at)
 *
 * The uploader always sees its metadata.  Anyone else sees it only when the
 * metadata names a synced table, the caller may read the owning row (the
 * object key's second folder) and may read the object itself, each under
 * the caller's own policies.  Otherwise: no rows (never an error that
 * reveals whether the object exists).
 */
Datum
kz_attachment_metadata(PG_FUNCTION_ARGS)
{
	const char *fname = "attachment_metadata";
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *bucket;
	char	   *path;
	pg_uuid_t	uid;
	bool		have_uid;
	Oid			argtypes[2] = {TEXTOID, TEXTOID};
	Datum		values[2];
	HeapTuple	found = NULL;
	TupleDesc	found_desc = NULL;

	InitMaterializedSRF(fcinfo, 0);
	require_storage(fname);
	bucket = required_text(fcinfo, 0, fname, "p_bucket_id", KZ_MAX_BUCKET_ID);
	path = required_text(fcinfo, 1, fname, "p_object_path", KZ_MAX_OBJECT_PATH);
	have_uid = kz_caller_uid(&uid);

	SPI_connect();
	values[0] = CStringGetTextDatum(bucket);
	values[1] = CStringGetTextDatum(path);
	if (SPI_execute_with_args("SELECT a.sha256, a.size, a.media_type, a.created_at, a.updated_at,"
							  "       a.created_by, a.table_name"
							  "  FROM kizunasync.attachments a"
							  " WHERE a.bucket_id = $1 AND a.object_path = $2",
							  2, argtypes, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "kizunasync: could not read attachment metadata");
	if (SPI_processed == 1)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		Datum		created_by = SPI_getbinval(tup, desc, 6, &isnull);
		char	   *table_name = SPI_getvalue(tup, desc, 7);
		bool		allowed = false;

		if (have_uid && memcmp(DatumGetUUIDP(created_by), &uid, sizeof(pg_uuid_t)) == 0)
			allowed = true;
		else if (table_name != NULL)
		{
			KzTableConf *conf = kz_tableconf_by_name(table_name, true);
			ObjectKey	key;

			if (conf != NULL && parse_object_key(path, &key) &&
				caller_sees_row(conf, key.row_key) &&
				caller_sees_object(bucket, path, NULL))
				allowed = true;
		}
		if (allowed)
		{
			/* re-read: the checks above ran other SPI queries */
			if (SPI_execute_with_args("SELECT a.sha256, a.size, a.media_type, a.created_at, a.updated_at"
									  "  FROM kizunasync.attachments a"
									  " WHERE a.bucket_id = $1 AND a.object_path = $2",
									  2, argtypes, values, NULL, true, 1) != SPI_OK_SELECT)
				elog(ERROR, "kizunasync: could not read attachment metadata");
			if (SPI_processed == 1)
			{
				found = SPI_tuptable->vals[0];
				found_desc = SPI_tuptable->tupdesc;
			}
		}
	}
	if (found != NULL)
	{
		Datum		outv[5];
		bool		outn[5];
		int			i;

		for (i = 0; i < 5; i++)
			outv[i] = SPI_getbinval(found, found_desc, i + 1, &outn[i]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, outv, outn);
	}
	SPI_finish();
	return (Datum) 0;
}

/*
 * attachment_vacuum(p_bucket, p_path) RETURNS void
 *
 * Forgets the caller's metadata of an object that no longer exists in
 * Storage.  Silent in every case.
 */
Datum
kz_attachment_vacuum(PG_FUNCTION_ARGS)
{
	const char *fname = "attachment_vacuum";
	char	   *bucket;
	char	   *path;
	pg_uuid_t	uid;
	Oid			argtypes[3] = {TEXTOID, TEXTOID, UUIDOID};
	Datum		values[3];

	require_storage(fname);
	bucket = required_text(fcinfo, 0, fname, "p_bucket", KZ_MAX_BUCKET_ID);
	path = required_text(fcinfo, 1, fname, "p_path", KZ_MAX_OBJECT_PATH);
	if (!kz_caller_uid(&uid))
		PG_RETURN_VOID();

	SPI_connect();
	if (!object_exists(bucket, path))
	{
		values[0] = CStringGetTextDatum(bucket);
		values[1] = CStringGetTextDatum(path);
		values[2] = UUIDPGetDatum(&uid);
		if (SPI_execute_with_args("DELETE FROM kizunasync.attachments"
								  " WHERE bucket_id = $1 AND object_path = $2 AND created_by = $3",
								  3, argtypes, values, NULL, false, 0) != SPI_OK_DELETE)
			elog(ERROR, "kizunasync: could not delete attachment metadata");
	}
	SPI_finish();
	PG_RETURN_VOID();
}
