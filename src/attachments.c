/*-------------------------------------------------------------------------
 *
 * attachments.c
 *	  attachment_confirm / attachment_metadata / attachment_vacuum: integrity
 *	  metadata (sha256, size, media type) for Supabase Storage objects whose
 *	  key is <owner>/<row key>/<file name>, the owner being the uploader's
 *	  JWT "sub".
 *
 *	  kizunasync.attachments is private; every authorization question is
 *	  answered as the caller, under its own policies: the object must be
 *	  readable by the caller in storage.objects, and the owning row (when a
 *	  synced table is named) must be readable by the caller.  Storage is
 *	  used only where schema storage is owned by a superuser (Supabase
 *	  installs it so); elsewhere the functions raise a clear error.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "errors.h"
#include "identity.h"
#include "render.h"
#include "rowkey.h"
#include "spi.h"
#include "tabledesc.h"

PG_FUNCTION_INFO_V1(kz_attachment_confirm);
PG_FUNCTION_INFO_V1(kz_attachment_metadata);
PG_FUNCTION_INFO_V1(kz_attachment_vacuum);

#define KZ_MAX_OBJECT_PATH	1024
#define KZ_MAX_BUCKET_ID	256
#define KZ_MAX_MEDIA_TYPE	255

/* A parsed object key: <owner>/<row key>/<rest> */
typedef struct ObjectKey
{
	char	   *owner;			/* first folder: the uploader's JWT sub */
	char	   *row_key;		/* second folder, NULL when absent */
} ObjectKey;

/* storage.objects, when Supabase Storage is installed; else an error. */
static Oid
attach_storage_objects(const char *fname)
{
	Oid			nsp = get_namespace_oid("storage", true);
	Oid			relid = OidIsValid(nsp) ? get_relname_relid("objects", nsp) : InvalidOid;

	if (!OidIsValid(relid) || !superuser_arg(kz_namespace_owner("storage")) ||
		get_rel_relkind(relid) != RELKIND_RELATION)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("%s needs Supabase Storage, which is not installed in this database", fname),
				 errdetail("There is no table storage.objects in a schema owned by a superuser."),
				 errhint("Attachments keep metadata about Storage objects; enable Supabase Storage first.")));
	return relid;
}

static char *
attach_required_text(FunctionCallInfo fcinfo, int argno, const char *fname, const char *argname,
					 int maxlen)
{
	char	   *s;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s of %s must not be null", argname, fname)));
	s = text_to_cstring(PG_GETARG_TEXT_PP(argno));
	if (s[0] == '\0' || (int) strlen(s) > maxlen)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s of %s must be 1 to %d bytes long", argname, fname, maxlen)));
	return s;
}

/*
 * Split an object path <owner>/<row key>/<name>.  Returns false when the
 * path has no folder.
 */
static bool
attach_parse_key(const char *path, ObjectKey *key)
{
	const char *slash1 = strchr(path, '/');
	const char *slash2;

	memset(key, 0, sizeof(*key));
	if (slash1 == NULL || slash1 == path)
		return false;
	key->owner = pnstrdup(path, slash1 - path);
	slash2 = strchr(slash1 + 1, '/');
	if (slash2 != NULL && slash2 > slash1 + 1)
		key->row_key = pnstrdup(slash1 + 1, slash2 - slash1 - 1);
	return true;
}

static char *
attach_require_caller(const char *fname)
{
	char	   *sub = kz_jwt_sub();

	if (sub == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("%s needs an authenticated caller", fname),
				 errdetail("The request carries no JWT \"sub\" claim.")));
	return sub;
}

/*
 * May the caller read storage object (bucket, path) under its own policies?
 * When owned_by is given, the object must also have been uploaded by that
 * user (storage.objects.owner_id, or the older owner column).
 */
static bool
attach_caller_sees_object(const char *bucket, const char *path, const char *owned_by)
{
	Oid			argtypes[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		values[3];
	char		nulls[3] = {' ', ' ', ' '};
	uint64		n;

	values[0] = CStringGetTextDatum(bucket);
	values[1] = CStringGetTextDatum(path);
	if (owned_by != NULL)
		values[2] = CStringGetTextDatum(owned_by);
	else
		nulls[2] = 'n';
	n = kz_spi_run("SELECT 1 FROM storage.objects o"
				   " WHERE o.bucket_id OPERATOR(pg_catalog.=) $1 AND o.name OPERATOR(pg_catalog.=) $2"
				   "   AND ($3 IS NULL OR COALESCE(o.owner_id, o.owner::pg_catalog.text)"
				   "        OPERATOR(pg_catalog.=) $3)",
				   3, argtypes, values, nulls, true, 1, SPI_OK_SELECT);
	SPI_freetuptable(SPI_tuptable);
	return n > 0;
}

/* Does storage object (bucket, path) exist at all?  Read as the table's owner. */
static bool
attach_object_exists(Oid objects, const char *bucket, const char *path)
{
	Oid			argtypes[2] = {TEXTOID, TEXTOID};
	Datum		values[2];
	KzUserSwitch sw;
	uint64		n;

	values[0] = CStringGetTextDatum(bucket);
	values[1] = CStringGetTextDatum(path);
	kz_as_restricted_begin(&sw, kz_rel_owner(objects), true);
	n = kz_spi_run("SELECT 1 FROM storage.objects o"
				   " WHERE o.bucket_id OPERATOR(pg_catalog.=) $1 AND o.name OPERATOR(pg_catalog.=) $2",
				   2, argtypes, values, NULL, true, 1, SPI_OK_SELECT);
	kz_as_restricted_end(&sw);
	SPI_freetuptable(SPI_tuptable);
	return n > 0;
}

/* May the caller read the row of synced table name whose key text is row_key? */
static bool
attach_caller_sees_row(const char *table_name, Oid role, const char *row_key)
{
	KzTableDesc *t = kz_tabledesc_open(table_name, role, true);
	Datum	   *keyvals;

	if (t == NULL || row_key == NULL)
		return false;
	keyvals = palloc(sizeof(Datum) * t->conf->nkeys);
	if (!kz_rowkey_parse(t->conf, row_key, keyvals))
		return false;
	return kz_render_row(t, keyvals, false) != NULL;
}

static bool
attach_valid_sha256(const char *s)
{
	int			i;

	for (i = 0; s[i] != '\0'; i++)
		if (!isxdigit((unsigned char) s[i]))
			return false;
	return i == 64;
}

/* The request of attachment_confirm, validated. */
typedef struct ConfirmArgs
{
	char	   *bucket;
	char	   *path;
	char	   *sha;
	int64		size;
	char	   *media_type;		/* NULL when not given */
	char	   *table_name;		/* NULL when not given */
	ObjectKey	key;
} ConfirmArgs;

static void
attach_confirm_args(FunctionCallInfo fcinfo, const char *fname, ConfirmArgs *a)
{
	int			i;

	a->bucket = attach_required_text(fcinfo, 0, fname, "p_bucket", KZ_MAX_BUCKET_ID);
	a->path = attach_required_text(fcinfo, 1, fname, "p_path", KZ_MAX_OBJECT_PATH);
	if (!attach_parse_key(a->path, &a->key))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("malformed object path %s",
						kz_quote_for_message(a->path, strlen(a->path), false)),
				 errhint("Object keys are <owner>/<row key>/<file name>.")));
	if (PG_ARGISNULL(2) ||
		!attach_valid_sha256((a->sha = text_to_cstring(PG_GETARG_TEXT_PP(2)))))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("sha256 must be 64 hexadecimal characters")));
	for (i = 0; a->sha[i]; i++)
		a->sha[i] = pg_ascii_tolower((unsigned char) a->sha[i]);
	if (PG_ARGISNULL(3) || (a->size = PG_GETARG_INT64(3)) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("size must be zero or more")));
	a->media_type = NULL;
	if (!PG_ARGISNULL(4))
	{
		a->media_type = text_to_cstring(PG_GETARG_TEXT_PP(4));
		if ((int) strlen(a->media_type) > KZ_MAX_MEDIA_TYPE)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("media type is longer than %d bytes", KZ_MAX_MEDIA_TYPE)));
	}
	a->table_name = NULL;
	if (!PG_ARGISNULL(5))
	{
		a->table_name = text_to_cstring(PG_GETARG_TEXT_PP(5));
		if (kz_tableconf_by_name(a->table_name, true) == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("table %s is not synced",
							kz_quote_for_message(a->table_name, strlen(a->table_name), false))));
	}
}

/* A confirm that matched no row: say whose it is, or what differs. */
static void
attach_confirm_refused(const ConfirmArgs *a, const char *sub)
{
	Oid			argtypes[2] = {TEXTOID, TEXTOID};
	Datum		values[2];
	char	   *owner;

	values[0] = CStringGetTextDatum(a->bucket);
	values[1] = CStringGetTextDatum(a->path);
	if (kz_spi_priv("SELECT created_by FROM kizunasync.attachments"
					" WHERE bucket_id OPERATOR(pg_catalog.=) $1 AND object_path OPERATOR(pg_catalog.=) $2",
					2, argtypes, values, NULL, true, 1, SPI_OK_SELECT) != 1)
		elog(ERROR, "attachment metadata row vanished");
	owner = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	if (owner == NULL || strcmp(owner, sub) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("object %s is registered to another user",
						kz_quote_for_message(a->path, strlen(a->path), false))));
	ereport(ERROR,
			(errcode(ERRCODE_CHECK_VIOLATION),
			 errmsg("object %s is already confirmed with other metadata",
					kz_quote_for_message(a->path, strlen(a->path), false)),
			 errdetail("The hash, size and media type of a confirmed object never change."),
			 errhint("Upload changed content under a new object key.")));
}

/*
 * attachment_confirm(p_bucket, p_path, p_sha256, p_size, p_media_type,
 *					  p_table DEFAULT NULL) RETURNS void
 *
 * Records (or re-confirms) the metadata of an object the caller uploaded.
 * Once a row carries a hash, its hash, size and media type never change; a
 * matching re-confirm refreshes updated_at and may fill a missing table.
 */
static Datum attach_confirm_body(FunctionCallInfo fcinfo);

Datum
kz_attachment_confirm(PG_FUNCTION_ARGS)
{
	return kz_entry_guarded(fcinfo, "kizunasync.attachment_confirm()", attach_confirm_body);
}

static Datum
attach_confirm_body(FunctionCallInfo fcinfo)
{
	const char *fname = "kizunasync.attachment_confirm()";
	KzCaller	caller;
	ConfirmArgs a;
	char	   *sub;
	Oid			argtypes[7] = {TEXTOID, TEXTOID, TEXTOID, INT8OID, TEXTOID, TEXTOID, TEXTOID};
	Datum		values[7];
	char		nulls[7] = {' ', ' ', ' ', ' ', ' ', ' ', ' '};

	kz_entry(fcinfo, fname, true, &caller);
	(void) attach_storage_objects(fname);
	attach_confirm_args(fcinfo, fname, &a);
	sub = attach_require_caller(fname);
	if (strcmp(sub, a.key.owner) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("the caller is not the owner of object %s",
						kz_quote_for_message(a.path, strlen(a.path), false)),
				 errdetail("The object key names owner %s.",
						   kz_quote_for_message(a.key.owner, strlen(a.key.owner), false))));

	kz_spi_connect();
	if (!attach_caller_sees_object(a.bucket, a.path, sub))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("the caller has uploaded no object %s in bucket %s that it may read",
						kz_quote_for_message(a.path, strlen(a.path), false),
						kz_quote_for_message(a.bucket, strlen(a.bucket), false))));
	if (a.table_name != NULL && !attach_caller_sees_row(a.table_name, caller.role, a.key.row_key))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("the caller may not read the row of table \"%s\" that owns object %s",
						a.table_name, kz_quote_for_message(a.path, strlen(a.path), false))));

	values[0] = CStringGetTextDatum(a.bucket);
	values[1] = CStringGetTextDatum(a.path);
	values[2] = CStringGetTextDatum(a.sha);
	values[3] = Int64GetDatum(a.size);
	if (a.media_type)
		values[4] = CStringGetTextDatum(a.media_type);
	else
		nulls[4] = 'n';
	values[5] = CStringGetTextDatum(sub);
	if (a.table_name)
		values[6] = CStringGetTextDatum(a.table_name);
	else
		nulls[6] = 'n';
	if (kz_spi_priv("INSERT INTO kizunasync.attachments AS a"
					" (bucket_id, object_path, sha256, size, media_type, created_by, table_name)"
					" VALUES ($1, $2, $3, $4, $5, $6, $7)"
					" ON CONFLICT (bucket_id, object_path) DO UPDATE"
					"   SET sha256 = excluded.sha256, size = excluded.size,"
					"       media_type = excluded.media_type,"
					"       table_name = COALESCE(a.table_name, excluded.table_name),"
					"       updated_at = pg_catalog.now()"
					" WHERE a.created_by OPERATOR(pg_catalog.=) excluded.created_by"
					"   AND (a.sha256 IS NULL OR (a.sha256 OPERATOR(pg_catalog.=) excluded.sha256"
					"        AND COALESCE(a.size OPERATOR(pg_catalog.=) excluded.size,"
					"                     a.size IS NULL AND excluded.size IS NULL)"
					"        AND COALESCE(a.media_type OPERATOR(pg_catalog.=) excluded.media_type,"
					"                     a.media_type IS NULL AND excluded.media_type IS NULL)))",
					7, argtypes, values, nulls, false, 0, SPI_OK_INSERT) != 1)
		attach_confirm_refused(&a, sub);
	kz_spi_finish();
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
static Datum attach_metadata_body(FunctionCallInfo fcinfo);

Datum
kz_attachment_metadata(PG_FUNCTION_ARGS)
{
	return kz_entry_guarded(fcinfo, "kizunasync.attachment_metadata()", attach_metadata_body);
}

static Datum
attach_metadata_body(FunctionCallInfo fcinfo)
{
	const char *fname = "kizunasync.attachment_metadata()";
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	KzCaller	caller;
	char	   *bucket;
	char	   *path;
	char	   *sub;
	Oid			argtypes[2] = {TEXTOID, TEXTOID};
	Datum		values[2];
	Datum		outv[5];
	bool		outn[5];
	bool		allowed = false;
	int			i;

	kz_entry(fcinfo, fname, true, &caller);
	InitMaterializedSRF(fcinfo, 0);
	(void) attach_storage_objects(fname);
	bucket = attach_required_text(fcinfo, 0, fname, "p_bucket_id", KZ_MAX_BUCKET_ID);
	path = attach_required_text(fcinfo, 1, fname, "p_object_path", KZ_MAX_OBJECT_PATH);
	sub = kz_jwt_sub();

	kz_spi_connect();
	values[0] = CStringGetTextDatum(bucket);
	values[1] = CStringGetTextDatum(path);
	if (kz_spi_priv("SELECT a.sha256, a.size, a.media_type, a.created_at, a.updated_at,"
					"       a.created_by, a.table_name"
					"  FROM kizunasync.attachments a"
					" WHERE a.bucket_id OPERATOR(pg_catalog.=) $1 AND a.object_path OPERATOR(pg_catalog.=) $2",
					2, argtypes, values, NULL, true, 1, SPI_OK_SELECT) == 1)
	{
		SPITupleTable *tt = SPI_tuptable;
		char	   *created_by = SPI_getvalue(tt->vals[0], tt->tupdesc, 6);
		char	   *table_name = SPI_getvalue(tt->vals[0], tt->tupdesc, 7);
		ObjectKey	key;

		for (i = 0; i < 5; i++)
			outv[i] = SPI_getbinval(tt->vals[0], tt->tupdesc, i + 1, &outn[i]);
		if (sub != NULL && created_by != NULL && strcmp(created_by, sub) == 0)
			allowed = true;
		else if (table_name != NULL && attach_parse_key(path, &key) &&
				 attach_caller_sees_row(table_name, caller.role, key.row_key) &&
				 attach_caller_sees_object(bucket, path, NULL))
			allowed = true;
		if (allowed)
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, outv, outn);
	}
	kz_spi_finish();
	return (Datum) 0;
}

/*
 * attachment_vacuum(p_bucket, p_path) RETURNS void
 *
 * Forgets the caller's metadata of an object that no longer exists in
 * Storage.  Silent in every case.
 */
static Datum attach_vacuum_body(FunctionCallInfo fcinfo);

Datum
kz_attachment_vacuum(PG_FUNCTION_ARGS)
{
	return kz_entry_guarded(fcinfo, "kizunasync.attachment_vacuum()", attach_vacuum_body);
}

static Datum
attach_vacuum_body(FunctionCallInfo fcinfo)
{
	const char *fname = "kizunasync.attachment_vacuum()";
	KzCaller	caller;
	Oid			objects;
	char	   *bucket;
	char	   *path;
	char	   *sub;
	Oid			argtypes[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		values[3];

	kz_entry(fcinfo, fname, true, &caller);
	objects = attach_storage_objects(fname);
	bucket = attach_required_text(fcinfo, 0, fname, "p_bucket", KZ_MAX_BUCKET_ID);
	path = attach_required_text(fcinfo, 1, fname, "p_path", KZ_MAX_OBJECT_PATH);
	sub = kz_jwt_sub();
	if (sub == NULL)
		PG_RETURN_VOID();

	kz_spi_connect();
	if (!attach_object_exists(objects, bucket, path))
	{
		values[0] = CStringGetTextDatum(bucket);
		values[1] = CStringGetTextDatum(path);
		values[2] = CStringGetTextDatum(sub);
		kz_spi_priv("DELETE FROM kizunasync.attachments"
					" WHERE bucket_id OPERATOR(pg_catalog.=) $1 AND object_path OPERATOR(pg_catalog.=) $2"
					" AND created_by OPERATOR(pg_catalog.=) $3",
					3, argtypes, values, NULL, false, 0, SPI_OK_DELETE);
	}
	kz_spi_finish();
	PG_RETURN_VOID();
}
