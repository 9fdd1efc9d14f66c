/*-------------------------------------------------------------------------
 *
 * pull.c
 *	  kizunasync.pull(buckets jsonb, cursor text, schema_version integer,
 *	                  "limit" integer DEFAULT 500, client_id uuid DEFAULT NULL)
 *	  RETURNS jsonb
 *
 *	  One call: validate the request (gate order of SPEC 4.3 with our own
 *	  SQLSTATEs), take ONE snapshot, compute the new high-water and the
 *	  holes still in flight, walk the candidate stream (changelog entries
 *	  and tombstones ordered by seq) in batches of what the page still
 *	  needs, read the rows under the caller's RLS and column privileges,
 *	  then write grants and the client registry and return the page.
 *
 *	  Cost is proportional to the page: every bookkeeping read is an index
 *	  range scan on (table_name, bucket_value, seq) bounded by LIMIT, and
 *	  rows are rendered with one query per table per batch.
 *
 *	  See decisions/0020 .. 0025 for the choices made here.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/fmgroids.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "kizunasync.h"
#include "cursor.h"
#include "identity.h"
#include "jsonb_writer.h"
#include "jsonbutil.h"
#include "plancache.h"
#include "request_pull.h"
#include "rowkey.h"
#include "sequencing.h"
#include "tableconf.h"

PG_FUNCTION_INFO_V1(kz_pull);

#define PULL_DEFAULT_LIMIT	500
#define MSG_PREFIX			"kizunasync.pull(): "

/* One synced table named by the request. */
typedef struct PullTable
{
	KzTableConf *conf;
	char	   *qualname;		/* quoted schema.table */
	int			ncols;			/* readable columns, attnum order */
	char	  **colnames;
	AttrNumber *colnums;
	Oid		   *coltypes;
	int32	   *coltypmods;
	int			natts;			/* relnatts, for lookups by attnum */
	bool	   *readable;		/* [attnum - 1] */
	SPIPlanPtr	render_plan;	/* prepared on first use */
	Oid		   *render_argtypes;
	bool		render_by_any;	/* one integer or uuid key: "key = ANY ($1)" */
} PullTable;

/* One param of a bucket entry, cast through its column type. */
typedef struct PullParam
{
	char	   *name;
	Jsonb	   *value;			/* to_jsonb of the cast value; JSON null for null */
	bool		scalar;			/* value is a scalar, held in sv */
	JsonbValue	sv;
} PullParam;

typedef struct PullBucket
{
	PullTable  *table;
	int			nparams;
	PullParam  *params;
} PullBucket;

/*
 * A source of candidates: the changelog or the tombstones of one
 * (table, bucket value) pair.  label is the bucket value text ('' for an
 * unbucketed table).
 */
typedef struct PullSource
{
	PullTable  *table;
	char	   *label;
	Jsonb	   *bucket_json;	/* the normalised bucket value (bucketed tables) */
	bool		tombstones;		/* else changelog */
	bool		exhausted;		/* nothing left in the window */
} PullSource;

typedef struct Candidate
{
	int64		seq;
	PullSource *src;
	char	   *pk;
	TimestampTz deleted_at;		/* tombstones only */
	Jsonb	   *row;			/* rendered row, NULL when not visible */
} Candidate;

/* A delivered row or tombstone. */
typedef struct Entry
{
	int64		seq;
	PullTable  *table;
	char	   *pk;
	Jsonb	   *row;			/* NULL for a tombstone */
	TimestampTz deleted_at;
} Entry;

typedef struct PullState
{
	int			ntables;
	PullTable **tables;
	int			nbuckets;
	PullBucket *buckets;
	int			nsources;
	PullSource *sources;

	int64		hw_in;			/* incoming high-water */
	int64		new_hw;
	KzHorizon	horizon;
	int64		window_pos;		/* window fetch position: seq > window_pos */

	Candidate  *hole_cands;		/* incoming holes now visible, in seq order */
	int			nhole_cands;
	int			hole_next;

	SPIPlanPtr	plan_cl_window;
	SPIPlanPtr	plan_tb_window;
	SPIPlanPtr	plan_tb_window_snap;
	SPIPlanPtr	plan_cl_holes;
	SPIPlanPtr	plan_tb_holes;
	SPIPlanPtr	plan_tb_holes_snap;

	Entry	   *rows;
	int			nrows;
	Entry	   *tombs;
	int			ntombs;

	bool		cut;			/* the max-holes rule lowered the high-water */
} PullState;

static PullTable *lookup_table(List **tables, const char *name);
static void check_columns_readable(PullTable **tables, int ntables, Oid role);
static Jsonb *cast_param(PullTable *t, AttrNumber attnum, const KzPullParam *p, int idx);
static Jsonb *make_signal_page(const char *type, text *cursor);
static Jsonb *jsonb_null(void);
static bool row_matches(Jsonb *row, const PullBucket *b);
static void build_sources(PullState *st, bool have_uid, pg_uuid_t *uid);
static void fetch_hole_candidates(PullState *st, int64 *holes, int nholes);
static int	next_batch(PullState *st, Candidate *batch, int need);
static void render_batch(PullState *st, Candidate *batch, int n);
static Jsonb *build_page(PullState *st, text *cursor, bool has_more, Jsonb *conflicts);
static Jsonb *page_conflicts(PullState *st);
static void record_grants(PullState *st, pg_uuid_t *uid);
static void register_client(bool have_uid, pg_uuid_t *uid, pg_uuid_t *client,
							int32 schema_version, text *cursor);

/* ------------------------------------------------------------------ utils */

static char *
int64_text(int64 v)
{
	char		buf[32];

	snprintf(buf, sizeof(buf), INT64_FORMAT, v);
	return pstrdup(buf);
}

static int
cmp_int64(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return (x > y) - (x < y);
}

static int
cmp_candidate(const void *a, const void *b)
{
	const Candidate *x = a;
	const Candidate *y = b;
	int			c;

	if (x->seq != y->seq)
		return (x->seq > y->seq) - (x->seq < y->seq);
	c = strcmp(x->src->table->conf->table_name, y->src->table->conf->table_name);
	if (c != 0)
		return c;
	return strcmp(x->pk, y->pk);
}

/* ->> of a top-level key of an object; *found tells absent keys apart. */
static char *
jsonb_key_text(Jsonb *obj, const char *key, bool *found)
{
	JsonbValue	k;
	JsonbValue *v;

	k.type = jbvString;
	k.val.string.val = (char *) key;
	k.val.string.len = strlen(key);
	v = findJsonbValueFromContainer(&obj->root, JB_FOBJECT, &k);
	*found = (v != NULL);
	return v ? kz_jsonb_text(v) : NULL;
}

static Jsonb *
jsonb_null(void)
{
	JsonbValue	v;

	v.type = jbvNull;
	return JsonbValueToJsonb(&v);
}

/* The scalar text of a jsonb that holds one scalar (to_jsonb of a value). */
static char *
jsonb_scalar_text(Jsonb *j)
{
	JsonbValue	v;

	if (JB_ROOT_IS_SCALAR(j) && JsonbExtractScalar(&j->root, &v))
		return kz_jsonb_text(&v);
	return JsonbToCString(NULL, &j->root, VARSIZE(j));
}

/* ------------------------------------------------------------ the gates */

/* A private copy of a table's config: the shared cache may be reset mid-call. */
static KzTableConf *
copy_conf(const KzTableConf *src)
{
	KzTableConf *c = palloc(sizeof(KzTableConf));
	int			i;

	memcpy(c, src, sizeof(KzTableConf));
	c->table_name = pstrdup(src->table_name);
	c->bucket_column = src->bucket_column ? pstrdup(src->bucket_column) : NULL;
	c->soft_delete_column = src->soft_delete_column ? pstrdup(src->soft_delete_column) : NULL;
	c->key_columns = palloc(sizeof(char *) * src->nkeys);
	c->key_attnums = palloc(sizeof(AttrNumber) * src->nkeys);
	c->key_types = palloc(sizeof(Oid) * src->nkeys);
	for (i = 0; i < src->nkeys; i++)
	{
		c->key_columns[i] = pstrdup(src->key_columns[i]);
		c->key_attnums[i] = src->key_attnums[i];
		c->key_types[i] = src->key_types[i];
	}
	return c;
}

static PullTable *
lookup_table(List **tables, const char *name)
{
	ListCell   *lc;
	PullTable  *t;
	KzTableConf *conf;
	Relation	rel;
	TupleDesc	desc;
	int			i;

	foreach(lc, *tables)
	{
		t = lfirst(lc);
		if (strcmp(t->conf->table_name, name) == 0)
			return t;
	}
	conf = kz_tableconf_by_name(name, true);
	if (conf == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg(MSG_PREFIX "table %s is not synced",
						kz_quote_for_message(name, strlen(name), false)),
				 errhint("A bucket entry names a table provisioned with kizunasync.sync_table().")));

	t = palloc0(sizeof(PullTable));
	t->conf = copy_conf(conf);
	conf = t->conf;
	t->qualname = quote_qualified_identifier(get_namespace_name(get_rel_namespace(conf->relid)),
											 get_rel_name(conf->relid));
	rel = table_open(conf->relid, AccessShareLock);
	desc = RelationGetDescr(rel);
	t->natts = desc->natts;
	t->readable = palloc0(sizeof(bool) * Max(desc->natts, 1));
	t->colnames = palloc0(sizeof(char *) * Max(desc->natts, 1));
	t->colnums = palloc(sizeof(AttrNumber) * Max(desc->natts, 1));
	t->coltypes = palloc(sizeof(Oid) * Max(desc->natts, 1));
	t->coltypmods = palloc(sizeof(int32) * Max(desc->natts, 1));
	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped)
			continue;
		/* filled by check_columns_readable once the role is known */
		t->colnames[i] = pstrdup(NameStr(att->attname));
		t->coltypes[i] = att->atttypid;
		t->coltypmods[i] = att->atttypmod;
		t->colnums[i] = att->attnum;
	}
	table_close(rel, AccessShareLock);
	*tables = lappend(*tables, t);
	return t;
}

/* attnum of a live column by name, or InvalidAttrNumber. */
static AttrNumber
column_attnum(PullTable *t, const char *name)
{
	AttrNumber	attnum = get_attnum(t->conf->relid, name);

	if (attnum <= 0)
		return InvalidAttrNumber;
	return attnum;
}

static int
cmp_table_name(const void *a, const void *b)
{
	return strcmp((*(PullTable *const *) a)->conf->table_name,
				  (*(PullTable *const *) b)->conf->table_name);
}

static int
cmp_cstring(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/*
 * Work out each table's projection for the caller's role, and refuse (KZL02)
 * a table whose key or bucket column the caller cannot read: without them a
 * row could not be named or scoped.  First offender in (table, column) order.
 */
static void
check_columns_readable(PullTable **tables, int ntables, Oid role)
{
	int			i,
				j;

	for (i = 0; i < ntables; i++)
	{
		PullTable  *t = tables[i];
		KzTableConf *c = t->conf;
		bool		whole = pg_class_aclcheck(c->relid, role, ACL_SELECT) == ACLCHECK_OK;
		int			n = 0;
		char	  **need;
		int			nneed = 0;
		AttrNumber	k;

		for (j = 0; j < t->natts; j++)
		{
			if (t->colnames[j] == NULL)
				continue;
			if (whole ||
				pg_attribute_aclcheck(c->relid, j + 1, role, ACL_SELECT) == ACLCHECK_OK)
			{
				t->readable[j] = true;
				t->colnames[n] = t->colnames[j];
				t->colnums[n] = t->colnums[j];
				t->coltypes[n] = t->coltypes[j];
				t->coltypmods[n] = t->coltypmods[j];
				n++;
			}
		}
		t->ncols = n;

		need = palloc(sizeof(char *) * (c->nkeys + 1));
		for (j = 0; j < c->nkeys; j++)
			need[nneed++] = c->key_columns[j];
		if (c->bucket_column)
			need[nneed++] = c->bucket_column;
		qsort(need, nneed, sizeof(char *), cmp_cstring);
		for (j = 0; j < nneed; j++)
		{
			k = get_attnum(c->relid, need[j]);
			if (k <= 0 || !t->readable[k - 1])
				ereport(ERROR,
						(errcode(ERRCODE_KZ_PULL_COLUMN_POLICY),
						 errmsg(MSG_PREFIX "table \"%s\": column \"%s\" is not readable by role \"%s\"",
								c->table_name, need[j], GetUserNameFromId(role, false)),
						 errhint("Grant SELECT on the key and bucket columns to the role that pulls.")));
		}
	}
}

/* Error context of a bucket value cast. */
typedef struct CastContext
{
	int			idx;
	const char *param;
	const char *table;
} CastContext;

static void
cast_error_callback(void *arg)
{
	CastContext *cc = arg;

	errcontext("bucket entry %d of kizunasync.pull(), param \"%s\" of table \"%s\"",
			   cc->idx, cc->param, cc->table);
}

/*
 * Cast a param value through its column's type and render it as to_jsonb
 * does (TimeZone is UTC inside pull).  A value the type refuses raises the
 * type's own class-22 error, with a context line naming the param.
 */
static Jsonb *
cast_param(PullTable *t, AttrNumber attnum, const KzPullParam *p, int idx)
{
	Oid			typid;
	int32		typmod;
	Oid			collid;
	Oid			typinput;
	Oid			typioparam;
	Datum		value;
	FmgrInfo	flinfo;
	FuncExpr   *expr;
	ErrorContextCallback errcb;
	CastContext cc;
	Datum		result;

	if (p->kind == KZ_PARAM_NULL)
		return jsonb_null();

	get_atttypetypmodcoll(t->conf->relid, attnum, &typid, &typmod, &collid);
	cc.idx = idx;
	cc.param = p->name;
	cc.table = t->conf->table_name;
	errcb.callback = cast_error_callback;
	errcb.arg = &cc;
	errcb.previous = error_context_stack;
	error_context_stack = &errcb;

	getTypeInputInfo(typid, &typinput, &typioparam);
	value = OidInputFunctionCall(typinput, p->text, typioparam, typmod);

	/* to_jsonb is polymorphic: give it an expression to learn the type from */
	fmgr_info(F_TO_JSONB, &flinfo);
	expr = makeFuncExpr(F_TO_JSONB, JSONBOID,
						list_make1(makeNullConst(typid, typmod, InvalidOid)),
						InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
	flinfo.fn_expr = (Node *) expr;
	result = FunctionCall1(&flinfo, value);

	error_context_stack = errcb.previous;
	return DatumGetJsonbP(result);
}

/* ------------------------------------------------------------- envelopes */

static void
push_string(JsonbParseState **ps, JsonbIteratorToken tok, const char *s, int len)
{
	JsonbValue	v;

	v.type = jbvString;
	v.val.string.val = (char *) s;
	v.val.string.len = len;
	pushJsonbValue(ps, tok, &v);
}

static void
push_kv_string(JsonbParseState **ps, const char *key, const char *s)
{
	kz_jsonb_push_key(ps, key);
	push_string(ps, WJB_VALUE, s, strlen(s));
}

static void
push_kv_bool(JsonbParseState **ps, const char *key, bool b)
{
	JsonbValue	v;

	kz_jsonb_push_key(ps, key);
	v.type = jbvBool;
	v.val.boolean = b;
	pushJsonbValue(ps, WJB_VALUE, &v);
}

static void
push_kv_jsonb(JsonbParseState **ps, const char *key, Jsonb *j)
{
	JsonbValue	v;

	kz_jsonb_push_key(ps, key);
	if (JB_ROOT_IS_SCALAR(j))
	{
		JsonbExtractScalar(&j->root, &v);
		pushJsonbValue(ps, WJB_VALUE, &v);
	}
	else
	{
		v.type = jbvBinary;
		v.val.binary.data = &j->root;
		v.val.binary.len = VARSIZE(j) - VARHDRSZ;
		pushJsonbValue(ps, WJB_VALUE, &v);
	}
}

static void
push_empty_array(JsonbParseState **ps, const char *key)
{
	kz_jsonb_push_key(ps, key);
	pushJsonbValue(ps, WJB_BEGIN_ARRAY, NULL);
	pushJsonbValue(ps, WJB_END_ARRAY, NULL);
}

/* {"rows": [], "cursor": <incoming>, "signal": {"type": T}, "has_more": false, "tombstones": []} */
static Jsonb *
make_signal_page(const char *type, text *cursor)
{
	JsonbParseState *ps = NULL;
	JsonbValue *res;

	pushJsonbValue(&ps, WJB_BEGIN_OBJECT, NULL);
	push_empty_array(&ps, "rows");
	kz_jsonb_push_key(&ps, "cursor");
	push_string(&ps, WJB_VALUE, VARDATA_ANY(cursor), VARSIZE_ANY_EXHDR(cursor));
	kz_jsonb_push_key(&ps, "signal");
	pushJsonbValue(&ps, WJB_BEGIN_OBJECT, NULL);
	push_kv_string(&ps, "type", type);
	pushJsonbValue(&ps, WJB_END_OBJECT, NULL);
	push_kv_bool(&ps, "has_more", false);
	push_empty_array(&ps, "tombstones");
	res = pushJsonbValue(&ps, WJB_END_OBJECT, NULL);
	return JsonbValueToJsonb(res);
}

/* deleted_at as YYYY-MM-DDTHH:MM:SS.mmmZ in UTC (decisions/0023). */
static char *
format_deleted_at(TimestampTz ts)
{
	struct pg_tm tm;
	fsec_t		fsec;

	if (TIMESTAMP_NOT_FINITE(ts) ||
		timestamp2tm(ts, NULL, &tm, &fsec, NULL, NULL) != 0 ||
		tm.tm_year < 1 || tm.tm_year > 9999)
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg(MSG_PREFIX "tombstone deleted_at is out of range")));
	return psprintf("%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
					tm.tm_year, tm.tm_mon, tm.tm_mday,
					tm.tm_hour, tm.tm_min, tm.tm_sec, (int) (fsec / 1000));
}

/*
 * The page, written straight into jsonb's binary form: every rendered row is
 * embedded as it is (decisions/0010 costs).  Key order is jsonb's (shorter
 * keys first): {"rows", "cursor", "signal", "has_more", ["conflicts"],
 * "tombstones"}; a row {"pk", "row", "seq", "table"}; a tombstone
 * {"pk", "seq", "table", "deleted_at"}.
 */
static Jsonb *
build_page(PullState *st, text *cursor, bool has_more, Jsonb *conflicts)
{
	static const char *const page_keys[] = {"rows", "cursor", "signal", "has_more", "tombstones"};
	static const char *const page_keys_c[] = {"rows", "cursor", "signal", "has_more", "conflicts", "tombstones"};
	static const char *const row_keys[] = {"pk", "row", "seq", "table"};
	static const char *const tomb_keys[] = {"pk", "seq", "table", "deleted_at"};
	KzJbWriter	w;
	Size		hint = 256 + VARSIZE_ANY_EXHDR(cursor);
	char		seqbuf[32];
	int			i;

	for (i = 0; i < st->nrows; i++)
		hint += VARSIZE(st->rows[i].row) + strlen(st->rows[i].pk) + 64 +
			strlen(st->rows[i].table->conf->table_name);
	for (i = 0; i < st->ntombs; i++)
		hint += strlen(st->tombs[i].pk) + 96 + strlen(st->tombs[i].table->conf->table_name);
	if (conflicts != NULL)
		hint += VARSIZE(conflicts);
	kz_jbw_init(&w, (int) Min(hint, (Size) MaxAllocSize / 2));

	if (conflicts != NULL)
		kz_jbw_begin_object(&w, 6, page_keys_c);
	else
		kz_jbw_begin_object(&w, 5, page_keys);

	kz_jbw_begin_array(&w, st->nrows);
	for (i = 0; i < st->nrows; i++)
	{
		Entry	   *e = &st->rows[i];
		const char *tn = e->table->conf->table_name;

		kz_jbw_begin_object(&w, 4, row_keys);
		kz_jbw_string(&w, e->pk, strlen(e->pk));
		kz_jbw_jsonb(&w, e->row);
		kz_jbw_string(&w, seqbuf, snprintf(seqbuf, sizeof(seqbuf), INT64_FORMAT, e->seq));
		kz_jbw_string(&w, tn, strlen(tn));
		kz_jbw_end(&w);
	}
	kz_jbw_end(&w);

	kz_jbw_string(&w, VARDATA_ANY(cursor), VARSIZE_ANY_EXHDR(cursor));
	kz_jbw_null(&w);
	kz_jbw_bool(&w, has_more);
	if (conflicts != NULL)
		kz_jbw_jsonb(&w, conflicts);

	kz_jbw_begin_array(&w, st->ntombs);
	for (i = 0; i < st->ntombs; i++)
	{
		Entry	   *e = &st->tombs[i];
		const char *tn = e->table->conf->table_name;
		char	   *da = format_deleted_at(e->deleted_at);

		kz_jbw_begin_object(&w, 4, tomb_keys);
		kz_jbw_string(&w, e->pk, strlen(e->pk));
		kz_jbw_string(&w, seqbuf, snprintf(seqbuf, sizeof(seqbuf), INT64_FORMAT, e->seq));
		kz_jbw_string(&w, tn, strlen(tn));
		kz_jbw_string(&w, da, strlen(da));
		kz_jbw_end(&w);
	}
	kz_jbw_end(&w);

	kz_jbw_end(&w);
	return kz_jbw_finish(&w);
}

/* ------------------------------------------------------ matching a row */

/*
 * A rendered row matches a bucket entry when every param names a key of the
 * row whose value equals the param's (jsonb equality; null equals null).  A
 * column the caller may not read is absent from the row and never matches.
 */
static bool
row_matches(Jsonb *row, const PullBucket *b)
{
	int			i;

	if (row == NULL)
		return false;
	for (i = 0; i < b->nparams; i++)
	{
		const PullParam *p = &b->params[i];
		JsonbValue	k;
		JsonbValue *v;

		k.type = jbvString;
		k.val.string.val = p->name;
		k.val.string.len = strlen(p->name);
		v = findJsonbValueFromContainer(&row->root, JB_FOBJECT, &k);
		if (v == NULL)
			return false;
		if (p->scalar && v->type != jbvBinary)
		{
			/* scalar against scalar: jsonb equality without building containers */
			if (v->type != p->sv.type)
				return false;
			switch (v->type)
			{
				case jbvNull:
					break;
				case jbvBool:
					if (v->val.boolean != p->sv.val.boolean)
						return false;
					break;
				case jbvString:
					if (v->val.string.len != p->sv.val.string.len ||
						memcmp(v->val.string.val, p->sv.val.string.val, v->val.string.len) != 0)
						return false;
					break;
				case jbvNumeric:
					if (!DatumGetBool(DirectFunctionCall2(numeric_eq,
														  NumericGetDatum(v->val.numeric),
														  NumericGetDatum(p->sv.val.numeric))))
						return false;
					break;
				default:
					return false;
			}
		}
		else
		{
			Jsonb	   *vj = JsonbValueToJsonb(v);

			if (compareJsonbContainers(&vj->root, &p->value->root) != 0)
				return false;
		}
	}
	return true;
}

static bool
deliverable(PullState *st, Candidate *c)
{
	int			i;

	if (c->row == NULL)
		return false;
	for (i = 0; i < st->nbuckets; i++)
	{
		if (st->buckets[i].table == c->src->table && row_matches(c->row, &st->buckets[i]))
			return true;
	}
	return false;
}

/* ------------------------------------------------------ candidate stream */

/*
 * Execute a statement through the backend-lifetime plan cache (plancache.c).
 * Statement texts are built from catalog names only.
 */
static int
exec_prepared(const char *sql, int nargs, Oid *argtypes, Datum *values,
			  bool read_only, long count)
{
	return SPI_execute_plan(kz_plan_cached(sql, nargs, argtypes), values, NULL, read_only, count);
}

static bool
grant_exists(pg_uuid_t *uid, const char *table, const char *label)
{
	Oid			types[3] = {UUIDOID, TEXTOID, TEXTOID};
	Datum		vals[3];
	int			rc;

	vals[0] = UUIDPGetDatum(uid);
	vals[1] = CStringGetTextDatum(table);
	vals[2] = CStringGetTextDatum(label);
	rc = exec_prepared("SELECT 1 FROM kizunasync.bucket_grants"
							   " WHERE user_id = $1 AND table_name = $2 AND bucket_value = $3",
							   3, types, vals, true, 1);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_with_args failed: %s", SPI_result_code_string(rc));
	return SPI_processed > 0;
}

/*
 * Sources: for each distinct (table, bucket value) pair, its changelog
 * entries and, when the caller holds a grant for that pair, its tombstones.
 * A null bucket value matches nothing.  Without a JWT sub there are no
 * grants and so no tombstones.
 */
static void
build_sources(PullState *st, bool have_uid, pg_uuid_t *uid)
{
	int			i,
				j;

	st->sources = palloc0(sizeof(PullSource) * st->nbuckets * 2);
	st->nsources = 0;
	for (i = 0; i < st->nbuckets; i++)
	{
		PullBucket *b = &st->buckets[i];
		KzTableConf *c = b->table->conf;
		char	   *label = NULL;
		Jsonb	   *bj = NULL;
		bool		dup = false;

		if (c->bucket_column == NULL)
			label = "";
		else
		{
			for (j = 0; j < b->nparams; j++)
				if (strcmp(b->params[j].name, c->bucket_column) == 0)
				{
					bj = b->params[j].value;
					label = jsonb_scalar_text(bj);
				}
			if (label == NULL)
				continue;		/* null bucket value: matches nothing */
		}
		for (j = 0; j < st->nsources; j++)
			if (st->sources[j].table == b->table && strcmp(st->sources[j].label, label) == 0)
				dup = true;
		if (dup)
			continue;

		st->sources[st->nsources].table = b->table;
		st->sources[st->nsources].label = label;
		st->sources[st->nsources].bucket_json = bj;
		st->sources[st->nsources].tombstones = false;
		st->nsources++;
		if (have_uid && grant_exists(uid, c->table_name, label))
		{
			st->sources[st->nsources].table = b->table;
			st->sources[st->nsources].label = label;
			st->sources[st->nsources].bucket_json = bj;
			st->sources[st->nsources].tombstones = true;
			st->nsources++;
		}
	}
}

static void
prepare_stream_plans(PullState *st)
{
	Oid			win[7] = {TEXTOID, TEXTOID, INT8OID, INT8OID, INT8OID, TEXTOID, JSONBOID};
	Oid			hol[5] = {TEXTOID, TEXTOID, INT8ARRAYOID, TEXTOID, JSONBOID};

	st->plan_cl_window =
		kz_plan_cached("SELECT seq, pk, NULL::timestamptz FROM kizunasync.changelog"
				" WHERE table_name = $1 AND bucket_value = $2 AND seq > $3 AND seq <= $4"
				" ORDER BY seq LIMIT $5", 5, win);
	st->plan_tb_window =
		kz_plan_cached("SELECT seq, pk, deleted_at FROM kizunasync.tombstones"
				" WHERE table_name = $1 AND bucket_value = $2 AND seq > $3 AND seq <= $4"
				" ORDER BY seq LIMIT $5", 5, win);
	st->plan_tb_window_snap =
		kz_plan_cached("SELECT seq, pk, deleted_at FROM kizunasync.tombstones"
				" WHERE table_name = $1 AND bucket_value = $2 AND seq > $3 AND seq <= $4"
				" AND (bucket_snapshot OPERATOR(pg_catalog.->) $6) OPERATOR(pg_catalog.=) $7"
				" ORDER BY seq LIMIT $5", 7, win);
	st->plan_cl_holes =
		kz_plan_cached("SELECT seq, pk, NULL::timestamptz FROM kizunasync.changelog"
				" WHERE table_name = $1 AND bucket_value = $2"
				" AND seq OPERATOR(pg_catalog.=) ANY ($3) ORDER BY seq", 3, hol);
	st->plan_tb_holes =
		kz_plan_cached("SELECT seq, pk, deleted_at FROM kizunasync.tombstones"
				" WHERE table_name = $1 AND bucket_value = $2"
				" AND seq OPERATOR(pg_catalog.=) ANY ($3) ORDER BY seq", 3, hol);
	st->plan_tb_holes_snap =
		kz_plan_cached("SELECT seq, pk, deleted_at FROM kizunasync.tombstones"
				" WHERE table_name = $1 AND bucket_value = $2"
				" AND seq OPERATOR(pg_catalog.=) ANY ($3)"
				" AND (bucket_snapshot OPERATOR(pg_catalog.->) $4) OPERATOR(pg_catalog.=) $5"
				" ORDER BY seq", 5, hol);
}

/* Append the rows of the last SPI result to cands[*n ..]; returns rows added. */
static int
collect(SPITupleTable *tt, uint64 nrows, PullSource *src, Candidate *cands, int *n)
{
	uint64		r;

	for (r = 0; r < nrows; r++)
	{
		HeapTuple	tup = tt->vals[r];
		bool		isnull;
		Candidate  *c = &cands[*n];

		c->seq = DatumGetInt64(SPI_getbinval(tup, tt->tupdesc, 1, &isnull));
		c->pk = TextDatumGetCString(SPI_getbinval(tup, tt->tupdesc, 2, &isnull));
		c->deleted_at = 0;
		if (src->tombstones)
			c->deleted_at = DatumGetTimestampTz(SPI_getbinval(tup, tt->tupdesc, 3, &isnull));
		c->src = src;
		c->row = NULL;
		(*n)++;
	}
	return (int) nrows;
}

static bool
source_has_snapshot_filter(PullSource *src)
{
	return src->tombstones && src->table->conf->bucket_column != NULL;
}

/* Incoming holes that are now visible (delivered ahead of the window). */
static void
fetch_hole_candidates(PullState *st, int64 *holes, int nholes)
{
	Datum	   *elems;
	ArrayType  *arr;
	int			i;
	int			cap = 0;

	st->nhole_cands = 0;
	st->hole_next = 0;
	if (nholes == 0 || st->nsources == 0)
		return;
	elems = palloc(sizeof(Datum) * nholes);
	for (i = 0; i < nholes; i++)
		elems[i] = Int64GetDatum(holes[i]);
	arr = construct_array(elems, nholes, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);

	/* every hole is one seq, so the sources together give at most nholes rows */
	cap = nholes;
	st->hole_cands = palloc0(sizeof(Candidate) * cap);
	for (i = 0; i < st->nsources; i++)
	{
		PullSource *src = &st->sources[i];
		Datum		vals[5];
		int			rc;
		SPIPlanPtr	plan;

		vals[0] = CStringGetTextDatum(src->table->conf->table_name);
		vals[1] = CStringGetTextDatum(src->label);
		vals[2] = PointerGetDatum(arr);
		if (source_has_snapshot_filter(src))
		{
			vals[3] = CStringGetTextDatum(src->table->conf->bucket_column);
			vals[4] = JsonbPGetDatum(src->bucket_json);
			plan = st->plan_tb_holes_snap;
		}
		else
			plan = src->tombstones ? st->plan_tb_holes : st->plan_cl_holes;
		rc = SPI_execute_plan(plan, vals, NULL, true, 0);
		if (rc != SPI_OK_SELECT)
			elog(ERROR, "SPI_execute_plan failed: %s", SPI_result_code_string(rc));
		if (st->nhole_cands + (int) SPI_processed > cap)
			elog(ERROR, "more hole candidates than holes");
		collect(SPI_tuptable, SPI_processed, src, st->hole_cands, &st->nhole_cands);
		SPI_freetuptable(SPI_tuptable);
	}
	qsort(st->hole_cands, st->nhole_cands, sizeof(Candidate), cmp_candidate);
}

/*
 * The next (at most) need candidates of the stream, in order: first the
 * visible incoming holes, then the window (seq > window_pos, <= new_hw).
 * Each source is asked for its first m entries past window_pos; the merged
 * list is a correct prefix of the stream up to the smallest last seq among
 * the sources that returned a full m (the others are exhausted).
 */
static int
next_batch(PullState *st, Candidate *batch, int need)
{
	int			n = 0;
	int			m;
	Candidate  *merged;
	int			nmerged = 0;
	int64		bound = PG_INT64_MAX;
	int64	   *short_last;
	int			i;

	while (n < need && st->hole_next < st->nhole_cands)
		batch[n++] = st->hole_cands[st->hole_next++];
	if (n == need)
		return n;

	m = need - n;
	merged = palloc(sizeof(Candidate) * (Size) m * Max(st->nsources, 1));
	short_last = palloc(sizeof(int64) * Max(st->nsources, 1));
	for (i = 0; i < st->nsources; i++)
	{
		PullSource *src = &st->sources[i];
		Datum		vals[7];
		int			rc;
		int			got;
		SPIPlanPtr	plan;

		if (src->exhausted)
			continue;
		vals[0] = CStringGetTextDatum(src->table->conf->table_name);
		vals[1] = CStringGetTextDatum(src->label);
		vals[2] = Int64GetDatum(st->window_pos);
		vals[3] = Int64GetDatum(st->new_hw);
		vals[4] = Int64GetDatum((int64) m);
		if (source_has_snapshot_filter(src))
		{
			vals[5] = CStringGetTextDatum(src->table->conf->bucket_column);
			vals[6] = JsonbPGetDatum(src->bucket_json);
			plan = st->plan_tb_window_snap;
		}
		else
			plan = src->tombstones ? st->plan_tb_window : st->plan_cl_window;
		rc = SPI_execute_plan(plan, vals, NULL, true, 0);
		if (rc != SPI_OK_SELECT)
			elog(ERROR, "SPI_execute_plan failed: %s", SPI_result_code_string(rc));
		got = collect(SPI_tuptable, SPI_processed, src, merged, &nmerged);
		SPI_freetuptable(SPI_tuptable);
		/* a short source has nothing past its last row; -1: a full one */
		short_last[i] = -1;
		if (got < m)
			short_last[i] = got > 0 ? merged[nmerged - 1].seq : 0;
		else if (merged[nmerged - 1].seq < bound)
			bound = merged[nmerged - 1].seq;
	}
	qsort(merged, nmerged, sizeof(Candidate), cmp_candidate);
	for (i = 0; i < nmerged && n < need && merged[i].seq <= bound; i++)
	{
		batch[n++] = merged[i];
		st->window_pos = merged[i].seq;
	}

	/*
	 * A short source is exhausted once every row it returned was taken; rows
	 * left over (the batch filled up first) are fetched again next time.
	 */
	for (i = 0; i < st->nsources; i++)
		if (!st->sources[i].exhausted && short_last[i] >= 0 && short_last[i] <= st->window_pos)
			st->sources[i].exhausted = true;
	return n;
}

/* ------------------------------------------------------ rendering rows */

/*
 * Prepare (as the caller) the render query of a table:
 *   SELECT u.o, to_jsonb(r)
 *     FROM ROWS FROM (unnest($1), ..., unnest($k)) WITH ORDINALITY AS u(a1, ..., ak, o),
 *          LATERAL (SELECT t.<col>, ... FROM <table> t
 *                    WHERE t.<key1> = u.a1 AND ... OFFSET 0) r
 * with the caller's readable columns only.  RLS and privileges apply.  The
 * OFFSET 0 keeps the subquery from being flattened into a hash join that
 * would read the whole table: each key is one primary-key index probe, so
 * the cost follows the page, not the table.
 */
static void
prepare_render(PullTable *t)
{
	KzTableConf *c = t->conf;
	StringInfoData sql;
	int			i;

	t->render_argtypes = palloc(sizeof(Oid) * c->nkeys);
	for (i = 0; i < c->nkeys; i++)
	{
		t->render_argtypes[i] = get_array_type(c->key_types[i]);
		if (!OidIsValid(t->render_argtypes[i]))
			elog(ERROR, "key type %u of table \"%s\" has no array type",
				 c->key_types[i], c->table_name);
	}

	/*
	 * One key column whose equality is bitwise (integers, uuid): one index
	 * scan for the whole batch,
	 *   SELECT r.<key>, to_jsonb(r) FROM (SELECT t.<col>, ... FROM <table> t
	 *     WHERE t.<key> = ANY ($1) OFFSET 0) r
	 * and each result row is matched back to its candidates by its key text
	 * (candidates' keys are canonical key text, see kz_rowkey_parse).
	 */
	t->render_by_any = (c->nkeys == 1 &&
						(c->key_types[0] == INT2OID || c->key_types[0] == INT4OID ||
						 c->key_types[0] == INT8OID || c->key_types[0] == UUIDOID));
	initStringInfo(&sql);
	if (t->render_by_any)
	{
		appendStringInfo(&sql, "SELECT r.%s, pg_catalog.to_jsonb(r) FROM (SELECT ",
						 quote_identifier(c->key_columns[0]));
		for (i = 0; i < t->ncols; i++)
			appendStringInfo(&sql, "%st.%s", i ? ", " : "", quote_identifier(t->colnames[i]));
		appendStringInfo(&sql, " FROM %s t WHERE t.%s OPERATOR(pg_catalog.=) ANY ($1) OFFSET 0) r",
						 t->qualname, quote_identifier(c->key_columns[0]));
		t->render_plan = kz_plan_cached(sql.data, 1, t->render_argtypes);
		return;
	}

	appendStringInfoString(&sql, "SELECT u.o, pg_catalog.to_jsonb(r) FROM ROWS FROM (");
	for (i = 0; i < c->nkeys; i++)
		appendStringInfo(&sql, "%spg_catalog.unnest($%d)", i ? ", " : "", i + 1);
	appendStringInfoString(&sql, ") WITH ORDINALITY AS u(");
	for (i = 0; i < c->nkeys; i++)
		appendStringInfo(&sql, "a%d, ", i + 1);
	appendStringInfoString(&sql, "o), LATERAL (SELECT ");
	for (i = 0; i < t->ncols; i++)
		appendStringInfo(&sql, "%st.%s", i ? ", " : "", quote_identifier(t->colnames[i]));
	appendStringInfo(&sql, " FROM %s t WHERE ", t->qualname);
	for (i = 0; i < c->nkeys; i++)
		appendStringInfo(&sql, "%st.%s OPERATOR(pg_catalog.=) u.a%d",
						 i ? " AND " : "", quote_identifier(c->key_columns[i]), i + 1);
	appendStringInfoString(&sql, " OFFSET 0) r");
	t->render_plan = kz_plan_cached(sql.data, c->nkeys, t->render_argtypes);
}

typedef struct PkPos
{
	const char *pk;
	int			pos;
} PkPos;

static int
cmp_pkpos(const void *a, const void *b)
{
	return strcmp(((const PkPos *) a)->pk, ((const PkPos *) b)->pk);
}

/* Render every candidate of the batch: one query per table. */
static void
render_batch(PullState *st, Candidate *batch, int n)
{
	int			ti;

	for (ti = 0; ti < st->ntables; ti++)
	{
		PullTable  *t = st->tables[ti];
		KzTableConf *c = t->conf;
		int		   *pos = palloc(sizeof(int) * n);
		Datum	  **keyvals = palloc(sizeof(Datum *) * c->nkeys);
		Datum	   *args = palloc(sizeof(Datum) * c->nkeys);
		Datum	   *one = palloc(sizeof(Datum) * c->nkeys);
		int			cnt = 0;
		int			i,
					k;
		int			rc;
		uint64		r;
		KzAsCaller	save;

		for (k = 0; k < c->nkeys; k++)
			keyvals[k] = palloc(sizeof(Datum) * n);
		for (i = 0; i < n; i++)
		{
			if (batch[i].src->table != t)
				continue;
			if (!kz_rowkey_parse(c, batch[i].pk, one))
				continue;		/* not a key of this table: no row */
			for (k = 0; k < c->nkeys; k++)
				keyvals[k][cnt] = one[k];
			pos[cnt++] = i;
		}
		if (cnt == 0)
			continue;
		for (k = 0; k < c->nkeys; k++)
		{
			int16		typlen;
			bool		typbyval;
			char		typalign;

			get_typlenbyvalalign(c->key_types[k], &typlen, &typbyval, &typalign);
			args[k] = PointerGetDatum(construct_array(keyvals[k], cnt, c->key_types[k],
													  typlen, typbyval, typalign));
		}

		kz_as_caller_begin(&save);
		if (t->render_plan == NULL)
			prepare_render(t);
		rc = SPI_execute_plan(t->render_plan, args, NULL, true, 0);
		kz_as_caller_end(&save);
		if (rc != SPI_OK_SELECT)
			elog(ERROR, "SPI_execute_plan failed: %s", SPI_result_code_string(rc));

		if (t->render_by_any)
		{
			/* match each row to every candidate of the batch with its key */
			PkPos	   *byk = palloc(sizeof(PkPos) * cnt);

			for (i = 0; i < cnt; i++)
			{
				byk[i].pk = batch[pos[i]].pk;
				byk[i].pos = pos[i];
			}
			qsort(byk, cnt, sizeof(PkPos), cmp_pkpos);
			for (r = 0; r < SPI_processed; r++)
			{
				HeapTuple	tup = SPI_tuptable->vals[r];
				bool		isnull;
				bool		jnull;
				Datum		kd = SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &isnull);
				Datum		d = SPI_getbinval(tup, SPI_tuptable->tupdesc, 2, &jnull);
				PkPos		key;
				PkPos	   *hit;
				Jsonb	   *row;

				if (isnull || jnull)
					elog(ERROR, "render query returned an unexpected row");
				key.pk = kz_rowkey_render(c, &kd, &isnull);
				hit = bsearch(&key, byk, cnt, sizeof(PkPos), cmp_pkpos);
				if (hit == NULL)
					elog(ERROR, "render query returned a row that was not asked for");
				while (hit > byk && strcmp(hit[-1].pk, key.pk) == 0)
					hit--;
				row = DatumGetJsonbP(d);
				for (; hit < byk + cnt && strcmp(hit->pk, key.pk) == 0; hit++)
					batch[hit->pos].row = row;
			}
			continue;
		}
		for (r = 0; r < SPI_processed; r++)
		{
			HeapTuple	tup = SPI_tuptable->vals[r];
			bool		isnull;
			int64		o = DatumGetInt64(SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &isnull));
			Datum		d = SPI_getbinval(tup, SPI_tuptable->tupdesc, 2, &isnull);

			if (o < 1 || o > cnt || isnull)
				elog(ERROR, "render query returned an unexpected row");
			/* no copy: the result stays until SPI_finish, after the page is built */
			batch[pos[o - 1]].row = DatumGetJsonbP(d);
		}
	}
}

/* ------------------------------------------------------ after the walk */

static int
cmp_entry_seq(const void *key, const void *elem)
{
	int64		s = *(const int64 *) key;
	int64		e = ((const Entry *) elem)->seq;

	return (s > e) - (s < e);
}

/*
 * conflicts: journal rows whose winner_seq is the seq of a delivered row of
 * the same table and pk whose row document carries the column.  NULL when
 * nothing matches (the key is then omitted).  Ordered by table, pk, column.
 */
static Jsonb *
page_conflicts(PullState *st)
{
	Datum	   *seqs = palloc(sizeof(Datum) * Max(st->nrows, 1));
	int			n = 0;
	int			i;
	Oid			types[1] = {INT8ARRAYOID};
	Datum		vals[1];
	int			rc;
	uint64		r;
	JsonbParseState *ps = NULL;
	JsonbValue *res;
	int			kept = 0;

	for (i = 0; i < st->nrows; i++)
		if (st->rows[i].table->conf->conflict_journal)
			seqs[n++] = Int64GetDatum(st->rows[i].seq);
	if (n == 0)
		return NULL;
	vals[0] = PointerGetDatum(construct_array(seqs, n, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	rc = exec_prepared("SELECT table_name, pk, winner_seq, column_name, loser_value,"
							   " conflict_mode, winner_mutation_id::text"
							   " FROM kizunasync.conflict_journal"
							   " WHERE winner_seq OPERATOR(pg_catalog.=) ANY ($1)"
							   " ORDER BY table_name, pk, column_name, id",
							   1, types, vals, true, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_with_args failed: %s", SPI_result_code_string(rc));

	pushJsonbValue(&ps, WJB_BEGIN_ARRAY, NULL);
	for (r = 0; r < SPI_processed; r++)
	{
		HeapTuple	tup = SPI_tuptable->vals[r];
		TupleDesc	td = SPI_tuptable->tupdesc;
		bool		isnull;
		char	   *table = TextDatumGetCString(SPI_getbinval(tup, td, 1, &isnull));
		char	   *pk = TextDatumGetCString(SPI_getbinval(tup, td, 2, &isnull));
		int64		wseq = DatumGetInt64(SPI_getbinval(tup, td, 3, &isnull));
		char	   *col = TextDatumGetCString(SPI_getbinval(tup, td, 4, &isnull));
		Jsonb	   *loser = DatumGetJsonbPCopy(SPI_getbinval(tup, td, 5, &isnull));
		char	   *mode = TextDatumGetCString(SPI_getbinval(tup, td, 6, &isnull));
		char	   *mid = SPI_getvalue(tup, td, 7);
		Entry	   *e;
		bool		found;

		e = bsearch(&wseq, st->rows, st->nrows, sizeof(Entry), cmp_entry_seq);
		if (e == NULL || strcmp(e->table->conf->table_name, table) != 0 ||
			strcmp(e->pk, pk) != 0)
			continue;
		(void) jsonb_key_text(e->row, col, &found);
		if (!found)
			continue;			/* the caller does not see that column */

		pushJsonbValue(&ps, WJB_BEGIN_OBJECT, NULL);
		push_kv_string(&ps, "pk", pk);
		push_kv_string(&ps, "table", table);
		push_kv_string(&ps, "winner_seq", int64_text(wseq));
		push_kv_string(&ps, "column_name", col);
		push_kv_jsonb(&ps, "loser_value", loser);
		push_kv_string(&ps, "conflict_mode", mode);
		push_kv_string(&ps, "winner_mutation_id", mid);
		pushJsonbValue(&ps, WJB_END_OBJECT, NULL);
		kept++;
	}
	SPI_freetuptable(SPI_tuptable);
	res = pushJsonbValue(&ps, WJB_END_ARRAY, NULL);
	return kept > 0 ? JsonbValueToJsonb(res) : NULL;
}

/*
 * Grants: the caller received a live row of (table, bucket value), so it may
 * later receive that value's tombstones.  Written after the walk; pairs the
 * caller already held (seen while building sources) are skipped.
 */
static void
record_grants(PullState *st, pg_uuid_t *uid)
{
	char	  **tabs = palloc(sizeof(char *) * Max(st->nrows, 1));
	char	  **vals = palloc(sizeof(char *) * Max(st->nrows, 1));
	int			n = 0;
	int			i,
				j;

	for (i = 0; i < st->nrows; i++)
	{
		Entry	   *e = &st->rows[i];
		KzTableConf *c = e->table->conf;
		char	   *v = "";
		bool		found;
		bool		known = false;

		if (c->bucket_column)
		{
			v = jsonb_key_text(e->row, c->bucket_column, &found);
			if (v == NULL)
				v = "";
		}
		for (j = 0; j < n && !known; j++)
			known = (strcmp(tabs[j], c->table_name) == 0 && strcmp(vals[j], v) == 0);
		for (j = 0; j < st->nsources && !known; j++)
			known = (st->sources[j].tombstones && st->sources[j].table == e->table &&
					 strcmp(st->sources[j].label, v) == 0);
		if (known)
			continue;
		tabs[n] = c->table_name;
		vals[n] = v;
		n++;
	}
	for (i = 0; i < n; i++)
	{
		Oid			types[3] = {UUIDOID, TEXTOID, TEXTOID};
		Datum		args[3];
		int			rc;

		args[0] = UUIDPGetDatum(uid);
		args[1] = CStringGetTextDatum(tabs[i]);
		args[2] = CStringGetTextDatum(vals[i]);
		rc = exec_prepared("INSERT INTO kizunasync.bucket_grants (user_id, table_name, bucket_value)"
								   " VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
								   3, types, args, false, 0);
		if (rc != SPI_OK_INSERT)
			elog(ERROR, "SPI_execute_with_args failed: %s", SPI_result_code_string(rc));
	}
}

/*
 * Client registry (SPEC 4.12): upsert the caller's client, keyed by
 * client_id or else the JWT session_id, never taking over another user's
 * registration; keep at most 100 per user.
 */
static void
register_client(bool have_uid, pg_uuid_t *uid, pg_uuid_t *client,
				int32 schema_version, text *cursor)
{
	Oid			types[4] = {UUIDOID, UUIDOID, TEXTOID, INT4OID};
	Datum		args[4];
	int			rc;

	if (!have_uid)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg(MSG_PREFIX "registering a client requires a JWT \"sub\" claim"),
				 errdetail("A table of this pull registers clients, and the caller has no user id.")));

	args[0] = UUIDPGetDatum(client);
	args[1] = UUIDPGetDatum(uid);
	args[2] = PointerGetDatum(cursor);
	args[3] = Int32GetDatum(schema_version);
	rc = exec_prepared("INSERT INTO kizunasync.clients AS c"
							   " (client_id, user_id, cursor, last_mutation_id, schema_version, last_seen)"
							   " VALUES ($1, $2, $3, NULL, $4, pg_catalog.now())"
							   " ON CONFLICT (client_id) DO UPDATE"
							   " SET cursor = EXCLUDED.cursor, schema_version = EXCLUDED.schema_version,"
							   " last_seen = EXCLUDED.last_seen"
							   " WHERE c.user_id OPERATOR(pg_catalog.=) EXCLUDED.user_id",
							   4, types, args, false, 0);
	if (rc != SPI_OK_INSERT)
		elog(ERROR, "SPI_execute_with_args failed: %s", SPI_result_code_string(rc));
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg(MSG_PREFIX "client %s is registered to another user",
						DatumGetCString(DirectFunctionCall1(uuid_out, UUIDPGetDatum(client))))));

	rc = exec_prepared("DELETE FROM kizunasync.clients"
							   " WHERE user_id OPERATOR(pg_catalog.=) $2"
							   " AND client_id OPERATOR(pg_catalog.<>) $1"
							   " AND client_id NOT IN (SELECT client_id FROM kizunasync.clients"
							   "   WHERE user_id OPERATOR(pg_catalog.=) $2"
							   "   AND client_id OPERATOR(pg_catalog.<>) $1"
							   "   ORDER BY last_seen DESC, client_id LIMIT 99)",
							   2, types, args, false, 0);
	if (rc != SPI_OK_DELETE)
		elog(ERROR, "SPI_execute_with_args failed: %s", SPI_result_code_string(rc));
}

/* ------------------------------------------------------------- kz_pull */

/*
 * The horizon of the page just built, whose position is pos: the last entry
 * (or last candidate examined) of a page that ends early, or, for a page
 * that reached L, the highest seq <= L visible in snap.  Holes: incoming
 * holes still pending, plus pending seqs in (in_hw, pos) among the requested
 * (table, bucket value) pairs.  More than KZ_CURSOR_MAX_HOLES: the high-water
 * drops to just below the first hole that does not fit (never below in_hw)
 * and st->cut is set, as kz_horizon_compute does.
 */
static void
finish_horizon(PullState *st, int64 in_hw, int64 pos, int64 *in_pending, int n_in_pending,
			   Snapshot snap)
{
	KzBucketPair *pairs = palloc(sizeof(KzBucketPair) * Max(st->nsources, 1));
	int			npairs = 0;
	int64	   *fresh;
	int			nfresh;
	int64	   *all;
	int			n = 0;
	int			i,
				j;

	for (i = 0; i < st->nsources; i++)
	{
		if (st->sources[i].tombstones)
			continue;			/* each pair has exactly one changelog source */
		pairs[npairs].table_name = st->sources[i].table->conf->table_name;
		pairs[npairs].bucket_value = st->sources[i].label;
		npairs++;
	}
	nfresh = kz_bucket_holes(pairs, npairs, in_hw + 1, pos - 1, snap, &fresh);

	/* merge two ascending distinct lists (incoming ones are all <= in_hw) */
	all = palloc(sizeof(int64) * Max(n_in_pending + nfresh, 1));
	for (i = 0, j = 0; i < n_in_pending || j < nfresh;)
	{
		int64		v;

		if (j >= nfresh || (i < n_in_pending && in_pending[i] <= fresh[j]))
		{
			v = in_pending[i++];
			if (j < nfresh && fresh[j] == v)
				j++;
		}
		else
			v = fresh[j++];
		all[n++] = v;
	}

	st->cut = false;
	st->horizon.high_water = pos;
	if (n > KZ_CURSOR_MAX_HOLES)
	{
		int64		cut = all[KZ_CURSOR_MAX_HOLES] - 1;

		if (cut < in_hw)
		{
			cut = in_hw;
			for (i = 0; i < n && all[i] <= in_hw; i++)
				;
			n = i;
		}
		else
			n = KZ_CURSOR_MAX_HOLES;
		st->horizon.high_water = cut;
		st->cut = true;
	}
	st->horizon.nholes = n;
	st->horizon.holes = n > 0 ? all : NULL;
}

static text *
encode_cursor(bool has_start, int64 start, int64 hw, const KzHorizon *hz, int64 below)
{
	KzCursor   *c = palloc0(sizeof(KzCursor));
	int			i;

	c->has_start = has_start;
	c->start = start;
	c->high_water = hw;
	for (i = 0; i < hz->nholes; i++)
		if (hz->holes[i] < below)
			c->holes[c->nholes++] = hz->holes[i];
	return kz_cursor_to_text(c);
}

Datum
kz_pull(PG_FUNCTION_ARGS)
{
	MemoryContext callcxt = CurrentMemoryContext;
	KzCursor   *cur = palloc(sizeof(KzCursor));
	text	   *cursor_in;
	bool		sv_null = PG_ARGISNULL(2);
	int32		schema_version = sv_null ? 0 : PG_GETARG_INT32(2);
	int32		limit;
	pg_uuid_t	sid;
	bool		have_sid;
	pg_uuid_t	uid;
	bool		have_uid;
	pg_uuid_t  *client = PG_ARGISNULL(4) ? NULL : PG_GETARG_UUID_P(4);
	KzPullRequest req;
	KzReqError	rerr;
	List	   *tables = NIL;
	PullState  *st = palloc0(sizeof(PullState));
	int			max_pull_scan;
	int			max_pull_limit;
	int64		reaped_seq;
	int64		start_e;
	int			minver = 0;
	bool		have_minver = false;
	bool		register_any = false;
	int			i,
				j;
	int			rc;
	Snapshot	snap;
	Oid			role = kz_caller_role();
	Candidate  *batch;
	int			scanned = 0;
	int			entries = 0;
	int64		last_scanned = 0;
	int64		last_seq = 0;
	bool		capped = false;
	bool		more = false;
	bool		has_more;
	text	   *cursor_out;
	Jsonb	   *conflicts = NULL;
	Jsonb	   *page;
	int64		L;
	int64	   *in_pending;
	int			n_in_pending;
	int64		page_pos;

	/* 1. session id claim (a non-uuid is 22P02), and the caller's user id */
	have_sid = kz_jwt_session_id(&sid);
	have_uid = kz_caller_uid(&uid);

	/* 2. cursor */
	kz_cursor_from_datum(PG_ARGISNULL(1) ? (Datum) 0 : PG_GETARG_DATUM(1),
						 PG_ARGISNULL(1), cur);
	cursor_in = PG_GETARG_TEXT_PP(1);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");

	rc = exec_prepared("SELECT s.max_pull_scan, s.max_pull_limit, r.reaped_seq"
					 " FROM kizunasync.settings s, kizunasync.reap_state r", 0, NULL, NULL, true, 1);
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "kizunasync settings are missing");
	{
		bool		isnull;

		max_pull_scan = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		max_pull_limit = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	}

	/* 3. limit */
	limit = PG_ARGISNULL(3) ? PULL_DEFAULT_LIMIT : PG_GETARG_INT32(3);
	if (limit < 1 || limit > max_pull_limit)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg(MSG_PREFIX "limit must be between 1 and %d", max_pull_limit),
				 errdetail("The request asked for %d.", limit),
				 errhint("The maximum is kizunasync.settings.max_pull_limit.")));

	/* 4. buckets: parse, at most 64 entries, documented limits */
	if (PG_ARGISNULL(0))
		req.nbuckets = 0;
	else
	{
		Jsonb	   *bj;
		char	   *btext;

		/*
		 * Refuse a huge argument before detoasting it.  The binary form of a
		 * JSON text is at most about twice its size, so this is a loose
		 * bound; the parser checks the text length exactly.
		 */
		if (toast_raw_datum_size(PG_GETARG_DATUM(0)) > 2 * (Size) KZ_PULL_MAX_TEXT)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg(MSG_PREFIX "buckets is too large"),
					 errdetail("The limit is %d bytes of JSON text.", KZ_PULL_MAX_TEXT)));
		bj = PG_GETARG_JSONB_P(0);
		btext = JsonbToCString(NULL, &bj->root, VARSIZE(bj));

		if (kz_pull_request_parse(btext, strlen(btext), palloc, &req, &rerr) != 0)
			ereport(ERROR,
					(errcode(MAKE_SQLSTATE(rerr.sqlstate[0], rerr.sqlstate[1], rerr.sqlstate[2],
										   rerr.sqlstate[3], rerr.sqlstate[4])),
					 errmsg("%s", rerr.message),
					 rerr.detail[0] ? errdetail("%s", rerr.detail) : 0));
	}

	/* 5. tables must be synced; 6. params must be columns of their table */
	st->nbuckets = req.nbuckets;
	st->buckets = palloc0(sizeof(PullBucket) * Max(req.nbuckets, 1));
	for (i = 0; i < req.nbuckets; i++)
	{
		PullTable  *t = lookup_table(&tables, req.buckets[i].table);

		st->buckets[i].table = t;
		for (j = 0; j < req.buckets[i].nparams; j++)
		{
			if (column_attnum(t, req.buckets[i].params[j].name) == InvalidAttrNumber)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg(MSG_PREFIX "table \"%s\" has no column %s",
								t->conf->table_name,
								kz_quote_for_message(req.buckets[i].params[j].name,
													 strlen(req.buckets[i].params[j].name),
													 false)),
						 errdetail("Bucket entry %d names it in params.", i)));
		}
	}
	st->ntables = list_length(tables);
	st->tables = palloc(sizeof(PullTable *) * Max(st->ntables, 1));
	i = 0;
	{
		ListCell   *lc;

		foreach(lc, tables)
			st->tables[i++] = lfirst(lc);
	}
	qsort(st->tables, st->ntables, sizeof(PullTable *), cmp_table_name);

	/* 7. RESET_REQUIRED */
	for (i = 0; i < st->ntables; i++)
	{
		if (!have_minver || st->tables[i]->conf->min_schema_version > minver)
			minver = st->tables[i]->conf->min_schema_version;
		have_minver = true;
		register_any |= st->tables[i]->conf->register_clients;
	}
	if (!have_minver)
	{
		bool		isnull;

		rc = exec_prepared("SELECT max(min_schema_version) FROM kizunasync.synced_tables", 0, NULL, NULL, true, 1);
		if (rc != SPI_OK_SELECT)
			elog(ERROR, "SPI_execute failed: %s", SPI_result_code_string(rc));
		minver = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		have_minver = !isnull;
	}
	if (sv_null || (have_minver && schema_version < minver))
	{
		MemoryContextSwitchTo(callcxt);
		page = make_signal_page("RESET_REQUIRED", cursor_in);
		SPI_finish();
		PG_RETURN_JSONB_P(page);
	}

	/* 8. KZL01: a bucketed table must be scoped by its bucket column */
	for (i = 0; i < req.nbuckets; i++)
	{
		KzTableConf *c = st->buckets[i].table->conf;
		bool		named = false;

		if (c->bucket_column == NULL)
			continue;
		for (j = 0; j < req.buckets[i].nparams; j++)
			named |= (strcmp(req.buckets[i].params[j].name, c->bucket_column) == 0);
		if (!named)
			ereport(ERROR,
					(errcode(ERRCODE_KZ_PULL_BUCKET_REQUIRED),
					 errmsg(MSG_PREFIX "table \"%s\" is bucketed on \"%s\": the pull bucket must name that column",
							c->table_name, c->bucket_column)));
	}

	/* 9. KZL02: key and bucket columns readable by the caller */
	check_columns_readable(st->tables, st->ntables, role);

	/* 10. CHECKPOINT_EXPIRED, against the reap horizon of the pull snapshot */
	snap = RegisterSnapshot(GetTransactionSnapshot());
	PushActiveSnapshot(snap);
	rc = exec_prepared("SELECT reaped_seq FROM kizunasync.reap_state", 0, NULL, NULL, true, 1);
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "kizunasync.reap_state is missing");
	{
		bool		isnull;

		reaped_seq = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	}
	start_e = cur->has_start ? cur->start : cur->high_water;

	/*
	 * A hole is a change this client has not received yet.  If a hole lies
	 * below the horizon, a tombstone it stood for may have been reaped, so
	 * the transfer expires just as if it had started there.
	 */
	if ((start_e > 0 && start_e < reaped_seq) ||
		(cur->nholes > 0 && cur->holes[0] < reaped_seq))
	{
		PopActiveSnapshot();
		UnregisterSnapshot(snap);
		MemoryContextSwitchTo(callcxt);
		page = make_signal_page("CHECKPOINT_EXPIRED", cursor_in);
		SPI_finish();
		PG_RETURN_JSONB_P(page);
	}

	/* 11. cast bucket params through their column types */
	for (i = 0; i < req.nbuckets; i++)
	{
		PullBucket *b = &st->buckets[i];

		b->nparams = req.buckets[i].nparams;
		b->params = palloc(sizeof(PullParam) * Max(b->nparams, 1));
		for (j = 0; j < b->nparams; j++)
		{
			KzPullParam *p = &req.buckets[i].params[j];

			b->params[j].name = p->name;
			b->params[j].value = cast_param(b->table, column_attnum(b->table, p->name), p, i);
			b->params[j].scalar = JB_ROOT_IS_SCALAR(b->params[j].value) &&
				JsonbExtractScalar(&b->params[j].value->root, &b->params[j].sv);
		}
	}

	/*
	 * 12. candidate stream, page, horizon.  L is read under the fence; the
	 * page is built from the snapshot with candidates bounded by L (nothing
	 * above the final high-water is visible in snap, so this is the window
	 * the full horizon would give); then only the range the cursor claims
	 * is classified, among the requested buckets (decisions/0010).
	 */
	st->hw_in = cur->high_water;
	L = kz_seq_fenced_high_water();
	n_in_pending = kz_holes_recheck(cur->holes, cur->nholes, cur->high_water, snap,
									&in_pending);
	st->new_hw = Max(L, cur->high_water);
	st->window_pos = cur->high_water;

	build_sources(st, have_uid, &uid);
	prepare_stream_plans(st);
	{
		/* incoming holes no longer in flight: visible ones are delivered now */
		int64	   *gone = palloc(sizeof(int64) * Max(cur->nholes, 1));
		int			ngone = 0;

		for (i = 0; i < cur->nholes; i++)
		{
			if (bsearch(&cur->holes[i], in_pending, n_in_pending,
						sizeof(int64), cmp_int64) == NULL)
				gone[ngone++] = cur->holes[i];
		}
		fetch_hole_candidates(st, gone, ngone);
	}

	st->rows = palloc(sizeof(Entry) * limit);
	st->tombs = palloc(sizeof(Entry) * limit);
	batch = palloc(sizeof(Candidate) * ((Size) limit + 1));
	while (!capped && !more)
	{
		int			need = (int) Min((int64) limit + 1 - entries,
										 (int64) max_pull_scan - scanned + 1);
		int			n = next_batch(st, batch, need);

		if (n == 0)
			break;
		render_batch(st, batch, n);
		for (i = 0; i < n; i++)
		{
			Candidate  *c = &batch[i];
			bool		ok;
			Entry	   *e;

			if (scanned >= max_pull_scan)
			{
				capped = true;
				break;
			}
			scanned++;
			last_scanned = c->seq;
			ok = deliverable(st, c);
			if (c->src->tombstones ? ok : !ok)
				continue;		/* withheld */
			if (++entries > limit)
			{
				more = true;
				break;
			}
			last_seq = c->seq;
			e = c->src->tombstones ? &st->tombs[st->ntombs++] : &st->rows[st->nrows++];
			e->seq = c->seq;
			e->table = c->src->table;
			e->pk = c->pk;
			e->row = c->src->tombstones ? NULL : c->row;
			e->deleted_at = c->deleted_at;
		}
	}

	if (capped || more)
		page_pos = capped ? last_scanned : last_seq;
	else
		page_pos = kz_highest_visible(cur->high_water, L, snap);
	finish_horizon(st, cur->high_water, page_pos, in_pending, n_in_pending, snap);
	if (st->cut)
	{
		/* too many holes: the page ends below the first that does not fit */
		capped = more = false;
		while (st->nrows > 0 && st->rows[st->nrows - 1].seq > st->horizon.high_water)
			st->nrows--;
		while (st->ntombs > 0 && st->tombs[st->ntombs - 1].seq > st->horizon.high_water)
			st->ntombs--;
	}
	if (capped || more)
	{
		cursor_out = encode_cursor(true, start_e, page_pos, &st->horizon, page_pos);
		has_more = true;
	}
	else
	{
		cursor_out = encode_cursor(false, 0, st->horizon.high_water, &st->horizon, PG_INT64_MAX);
		has_more = st->horizon.nholes > 0;
	}

	conflicts = page_conflicts(st);

	PopActiveSnapshot();
	UnregisterSnapshot(snap);

	/* 13. writes: grants, then the client registry */
	if (have_uid && st->nrows > 0)
		record_grants(st, &uid);
	if (register_any && (client != NULL || have_sid))
		register_client(have_uid, &uid, client ? client : &sid, schema_version, cursor_out);

	MemoryContextSwitchTo(callcxt);
	page = build_page(st, cursor_out, has_more, conflicts);
	SPI_finish();
	PG_RETURN_JSONB_P(page);
}
