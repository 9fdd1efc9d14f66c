/*-------------------------------------------------------------------------
 *
 * resync.c
 *	  kizunasync.resync_bucket(tbl regclass, bucket jsonb DEFAULT '{}')
 *	  RETURNS bigint
 *
 *	  Makes a bucket's rows reach every device of that bucket again, for a
 *	  change of what callers may see that no write to the rows recorded: a
 *	  membership added or removed in a table that is not synced, a policy
 *	  input that lives in another table, a column privilege granted or
 *	  revoked (decisions/0093).  Every row entry of the bucket is
 *	  written again, as the write path writes an entry (the same row key,
 *	  bucket value and row version, a new seq; numbered like any captured
 *	  change, so at the commit beyond the transaction's write-time budget).
 *	  Each device of the bucket then reads them past its cursor: a caller
 *	  who may see the row now gets it, a caller who holds the bucket's grant
 *	  and may not gets a tombstone (decisions/0024, "Visibility").  Returns
 *	  the number of entries written.
 *
 *	  bucket names the bucket as a pull's params do: {"<bucket column>":
 *	  value} for a bucketed table ({} for an unbucketed one, the whole
 *	  table).  Its value is cast and labelled exactly as a pull's, so the
 *	  entries written are those a pull of these params reads; a null value
 *	  names no bucket (a pull never delivers such rows) and writes nothing.
 *
 *	  Runs as the caller (SECURITY INVOKER), who must own the table, as for
 *	  sync_table and repair_table: an application calls it from a trigger
 *	  on its membership table through a SECURITY DEFINER function owned by
 *	  the table's owner.  The value is cast as the caller; the entries are
 *	  read and locked in privileged sections (decisions/0060).  An entry is
 *	  locked (FOR UPDATE) before it is written again, and one a concurrent
 *	  writer superseded meanwhile is skipped (that writer's entry is new),
 *	  so a stale image never replaces a newer capture; a writer that would
 *	  supersede a locked entry waits for this transaction, and its entry
 *	  gets a later seq.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/objectaddress.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"

#include "capture.h"
#include "capture_batch.h"
#include "entry_read.h"
#include "identity.h"
#include "pgcompat.h"
#include "pull_gates.h"
#include "pull_stream.h"
#include "spi.h"
#include "stamp.h"
#include "tableconf.h"
#include "wakeup.h"

PG_FUNCTION_INFO_V1(kz_resync_bucket);

#define RESYNC_FNAME	"kizunasync.resync_bucket()"
#define RESYNC_CHUNK	1000

/*
 * The bucket's param as a pull request carries it (KZ_PARAM_*): false when
 * the bucket names no value (a null).
 */
static bool
resync_param(const KzTableConf *conf, Jsonb *bucket, KzPullParam *p)
{
	JsonbValue *v;

	if (!JB_ROOT_IS_OBJECT(bucket) || JB_ROOT_IS_SCALAR(bucket))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("bucket must be a JSON object"),
				 errhint("Name the bucket as a pull's params do: {\"<bucket column>\": value}.")));
	if (conf->bucket_column == NULL)
	{
		if (JB_ROOT_COUNT(bucket) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("table \"%s\" has no bucket column", conf->table_name),
					 errhint("Pass {} to write the whole table's entries again.")));
		return true;
	}
	v = getKeyJsonValueFromContainer(&bucket->root, conf->bucket_column,
									 strlen(conf->bucket_column), NULL);
	if (v == NULL || JB_ROOT_COUNT(bucket) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("bucket must name exactly the bucket column \"%s\" of table \"%s\"",
						conf->bucket_column, conf->table_name),
				 errhint("A bucket is one value of the bucket column; other params only filter a pull.")));
	p->name = conf->bucket_column;
	switch (v->type)
	{
		case jbvNull:
			return false;
		case jbvBool:
			p->kind = KZ_PARAM_BOOL;
			p->text = v->val.boolean ? "true" : "false";
			break;
		case jbvNumeric:
			p->kind = KZ_PARAM_INTEGER;
			p->text = DatumGetCString(DirectFunctionCall1(numeric_out,
														  NumericGetDatum(v->val.numeric)));
			break;
		case jbvString:
			p->kind = KZ_PARAM_STRING;
			p->text = pnstrdup(v->val.string.val, v->val.string.len);
			break;
		default:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("the bucket value must be a string, a number, true, false or null")));
	}
	return true;
}

/*
 * The bucket value label a pull of {bucket} reads (pull_gates.h casts the
 * value as the current user under the rendering settings, pull_stream.h
 * labels it); NULL when the bucket names no value.
 */
static char *
resync_label(const KzTableConf *conf, Jsonb *bucket)
{
	KzPullParam param;
	KzPullBucket b;
	KzPullRequest req;
	KzPullTables pt;
	KzPullStream s;
	int			level;

	if (!resync_param(conf, bucket, &param))
		return NULL;
	b.table = conf->table_name;
	b.nparams = conf->bucket_column != NULL ? 1 : 0;
	b.params = &param;
	req.nbuckets = 1;
	req.buckets = &b;
	kz_pull_resolve(&req, GetUserId(), &pt);
	level = kz_render_settings_begin();
	kz_pull_cast_params(&req, &pt);
	kz_render_settings_end(level);
	kz_stream_init(&s, &pt, NULL, NULL, 0, 0);
	return s.nsources > 0 ? s.sources[0].label : NULL;
}

/*
 * Write every entry of (table, label) again, a chunk at a time in seq
 * order, up to the highest seq the bucket had when this began (the
 * entries written here get higher ones).
 */
static int64
resync_entries(const KzTableConf *conf, const char *label)
{
	KzChange   *changes = palloc(sizeof(KzChange) * RESYNC_CHUNK);
	MemoryContext chunk_cxt = AllocSetContextCreate(CurrentMemoryContext, "kizunasync resync",
													ALLOCSET_DEFAULT_SIZES);
	int64		bucket = kz_entry_bucket(conf->id, label, false);
	int64		top;
	int64		after = 0;
	int64		total = 0;

	top = kz_entry_bucket_max_seq(conf, bucket);
	if (top == 0)
		return 0;

	for (;;)
	{
		KzEntryBucketRow *rows;
		int			n;
		int			i;
		MemoryContext old;

		old = MemoryContextSwitchTo(chunk_cxt);
		n = kz_entry_bucket_rows(conf, bucket, after, top, RESYNC_CHUNK, true, &rows);
		for (i = 0; i < n; i++)
		{
			KzChange   *ch = &changes[i];

			ch->op = 'u';
			ch->tid = conf->id;
			ch->table_name = conf->table_name;
			ch->pk = rows[i].pk;
			ch->bucket_value = (char *) label;
			ch->snapshot = NULL;
			ch->row_xmin = rows[i].have_xmin ? rows[i].row_xmin : InvalidTransactionId;
			ch->no_row_elsewhere = false;	/* its entry is in this bucket */
			after = rows[i].seq;
		}
		MemoryContextSwitchTo(old);
		/* the batch copies what it keeps */
		kz_capture_batch_add(changes, n);
		MemoryContextReset(chunk_cxt);
		total += n;
		CHECK_FOR_INTERRUPTS();
		if (n < RESYNC_CHUNK)
			break;
	}
	MemoryContextDelete(chunk_cxt);
	pfree(changes);
	return total;
}

static Datum
resync_body(FunctionCallInfo fcinfo)
{
	KzCaller	caller;
	Oid			relid;
	KzTableConf *conf;
	char	   *label;
	char	   *table_name;
	bool		wakeup;
	int64		n = 0;
	MemoryContext callcxt = CurrentMemoryContext;

	kz_entry(fcinfo, RESYNC_FNAME, true, &caller);
	relid = PG_GETARG_OID(0);
	if (!kz_class_ownercheck(relid, caller.role))
		aclcheck_error(ACLCHECK_NOT_OWNER, get_relkind_objtype(get_rel_relkind(relid)),
					   get_rel_name(relid));
	PreventCommandIfReadOnly(RESYNC_FNAME);
	kz_spi_connect();
	conf = kz_tableconf_by_relid(relid, true);
	if (conf == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table \"%s\" is not synced", get_rel_name(relid))));
	table_name = MemoryContextStrdup(callcxt, conf->table_name);	/* outlives SPI */
	label = resync_label(conf, PG_GETARG_JSONB_P(1));
	if (label != NULL)
		n = resync_entries(conf, label);
	wakeup = n > 0 && conf->wakeup;
	kz_spi_finish();
	if (wakeup)
		kz_wakeup_note(table_name, relid);
	PG_RETURN_INT64(n);
}

Datum
kz_resync_bucket(PG_FUNCTION_ARGS)
{
	return kz_entry_guarded(fcinfo, RESYNC_FNAME, resync_body);
}
