/*-------------------------------------------------------------------------
 *
 * pull_gates.c
 *	  The request gates of kizunasync.pull (pull_gates.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"

#include "errors.h"
#include "jsonbutil.h"
#include "pull_gates.h"
#include "request_pull_jsonb.h"
#include "spi.h"

/* The buckets argument (argument 0 of pull), parsed and checked (request_pull.h). */
void
kz_pull_parse_buckets(FunctionCallInfo fcinfo, int max_buckets, KzPullRequest *req)
{
	Jsonb	   *bj;
	char	   *btext;
	KzReqError	rerr;
	int			rc;

	if (PG_ARGISNULL(0))
	{
		req->nbuckets = 0;
		req->buckets = NULL;
		return;
	}

	/*
	 * Refuse a huge argument before detoasting it.  The binary form of a
	 * JSON text is at most about twice its size, so this is a loose bound;
	 * the parser checks the text length exactly.
	 */
	if (toast_raw_datum_size(PG_GETARG_DATUM(0)) > 2 * kz_pull_max_text(max_buckets))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("buckets is too large"),
				 errdetail("The limit is %zu bytes of JSON text.", kz_pull_max_text(max_buckets))));
	bj = PG_GETARG_JSONB_P(0);
	if (!kz_pull_request_from_jsonb(bj, max_buckets, req, &rerr, &rc))
	{
		btext = JsonbToCString(NULL, &bj->root, VARSIZE(bj));
		rc = kz_pull_request_parse(btext, strlen(btext), max_buckets, palloc, req, &rerr);
	}
	if (rc != 0)
		kz_raise_request_error(&rerr);
}

static int
gates_cmp_table(const void *a, const void *b)
{
	return strcmp((*(KzTableDesc *const *) a)->conf->table_name,
				  (*(KzTableDesc *const *) b)->conf->table_name);
}

static int
gates_cmp_cstring(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

void
kz_pull_resolve(const KzPullRequest *req, Oid role, KzPullTables *out)
{
	int			i,
				j;

	out->ntables = 0;
	out->tables = palloc(sizeof(KzTableDesc *) * Max(req->nbuckets, 1));
	out->nscopes = req->nbuckets;
	out->scopes = palloc0(sizeof(KzScope) * Max(req->nbuckets, 1));
	for (i = 0; i < req->nbuckets; i++)
	{
		const char *name = req->buckets[i].table;
		KzTableDesc *t = NULL;

		for (j = 0; j < out->ntables && t == NULL; j++)
			if (strcmp(out->tables[j]->conf->table_name, name) == 0)
				t = out->tables[j];
		if (t == NULL)
		{
			t = kz_tabledesc_open(name, role, true);
			if (t == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("table %s is not synced",
								kz_quote_for_message(name, strlen(name), false)),
						 errdetail("Bucket entry %d names it.", i),
						 errhint("A bucket entry names a table provisioned with kizunasync.sync_table().")));
			out->tables[out->ntables++] = t;
		}
		out->scopes[i].table = t;
		for (j = 0; j < req->buckets[i].nparams; j++)
		{
			const char *p = req->buckets[i].params[j].name;

			if (kz_tabledesc_column(t, p) == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("table \"%s\" has no column %s", t->conf->table_name,
								kz_quote_for_message(p, strlen(p), false)),
						 errdetail("Bucket entry %d names it in params.", i)));
		}
	}
	qsort(out->tables, out->ntables, sizeof(KzTableDesc *), gates_cmp_table);
}

bool
kz_pull_min_schema_version(const KzPullTables *pt, int *minver, bool *register_any)
{
	bool		have = false;
	int			i;

	*register_any = false;
	for (i = 0; i < pt->ntables; i++)
	{
		KzTableConf *c = pt->tables[i]->conf;

		if (!have || c->min_schema_version > *minver)
			*minver = c->min_schema_version;
		have = true;
		*register_any |= c->register_clients;
	}
	if (!have)
	{
		bool		isnull;
		Datum		d;

		kz_spi_priv("SELECT pg_catalog.max(min_schema_version) FROM kizunasync.synced_tables",
					0, NULL, NULL, NULL, true, 1, SPI_OK_SELECT);
		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
		if (!isnull)
		{
			*minver = DatumGetInt32(d);
			have = true;
		}
		SPI_freetuptable(SPI_tuptable);
	}
	return have;
}

void
kz_pull_check_scopes(const KzPullRequest *req, const KzPullTables *pt, Oid role)
{
	int			i,
				j;

	/* KZL01: a bucketed table must be scoped by its bucket column */
	for (i = 0; i < req->nbuckets; i++)
	{
		KzTableConf *c = pt->scopes[i].table->conf;
		bool		named = false;

		if (c->bucket_column == NULL)
			continue;
		for (j = 0; j < req->buckets[i].nparams; j++)
			named |= (strcmp(req->buckets[i].params[j].name, c->bucket_column) == 0);
		if (!named)
			ereport(ERROR,
					(errcode(ERRCODE_KZ_PULL_BUCKET_REQUIRED),
					 errmsg("pull of table \"%s\" does not name its bucket column \"%s\"",
							c->table_name, c->bucket_column),
					 errdetail("Bucket entry %d does not name it in params.", i)));
	}

	/*
	 * KZL02: without its key and bucket columns a row could not be named or
	 * scoped.  First offender in (table, column) order.
	 */
	for (i = 0; i < pt->ntables; i++)
	{
		KzTableDesc *t = pt->tables[i];
		KzTableConf *c = t->conf;
		const char **need = palloc(sizeof(char *) * (c->nkeys + 1));
		int			nneed = 0;

		for (j = 0; j < c->nkeys; j++)
			need[nneed++] = c->key_columns[j];
		if (c->bucket_column)
			need[nneed++] = c->bucket_column;
		qsort(need, nneed, sizeof(char *), gates_cmp_cstring);
		for (j = 0; j < nneed; j++)
		{
			KzColumn   *col = kz_tabledesc_column(t, need[j]);

			if (col == NULL || !col->can_select)
				ereport(ERROR,
						(errcode(ERRCODE_KZ_PULL_COLUMN_POLICY),
						 errmsg("column \"%s\" of table \"%s\" is not readable by role \"%s\"",
								need[j], c->table_name, GetUserNameFromId(role, false)),
						 errhint("Grant SELECT on the key and bucket columns to the role that pulls.")));
		}
	}
}

/* Error context of a bucket value cast. */
typedef struct GatesCastContext
{
	int			idx;
	const char *param;
	const char *table;
} GatesCastContext;

static void
gates_cast_error_callback(void *arg)
{
	GatesCastContext *cc = arg;

	errcontext("bucket entry %d, param \"%s\" of table \"%s\"",
			   cc->idx, cc->param, cc->table);
}

/*
 * The type input and to_jsonb calls of the last column type cast: a pull
 * naming many buckets casts the same column's values one after another.
 */
typedef struct GatesCastCache
{
	bool		valid;
	Oid			typid;
	int32		typmod;
	Oid			typioparam;
	FmgrInfo	input;
	FmgrInfo	to_jsonb;
	FmgrInfo	output;			/* GATES_JSONB_STRING: the type's output */
	int			jsonb;			/* how to_jsonb renders the type (below) */
} GatesCastCache;

/*
 * What to_jsonb makes of a value of a few built-in types (not domains),
 * done here without its per-call type lookups (decisions/0025, item 7):
 * an integer is the JSON number its output text reads as, a uuid or a
 * string its output text as a JSON string.  Any other type goes through
 * to_jsonb itself.
 */
#define GATES_JSONB_CALL	0
#define GATES_JSONB_INTEGER	1
#define GATES_JSONB_STRING	2

static int
gates_jsonb_kind(Oid typid)
{
	switch (typid)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
			return GATES_JSONB_INTEGER;
		case TEXTOID:
		case VARCHAROID:
		case UUIDOID:
			return GATES_JSONB_STRING;
		default:
			return GATES_JSONB_CALL;
	}
}

/* to_jsonb(value) of a column of the cached type. */
static Jsonb *
gates_to_jsonb(GatesCastCache *cache, Datum value)
{
	JsonbValue	jv;
	char	   *out;

	switch (cache->jsonb)
	{
		case GATES_JSONB_INTEGER:
			jv.type = jbvNumeric;
			jv.val.numeric = int64_to_numeric(cache->typid == INT8OID ? DatumGetInt64(value) :
											  cache->typid == INT4OID ? DatumGetInt32(value) :
											  DatumGetInt16(value));
			return JsonbValueToJsonb(&jv);
		case GATES_JSONB_STRING:
			out = OutputFunctionCall(&cache->output, value);
			jv.type = jbvString;
			jv.val.string.val = out;
			jv.val.string.len = strlen(out);
			return JsonbValueToJsonb(&jv);
		default:
			return DatumGetJsonbP(FunctionCall1(&cache->to_jsonb, value));
	}
}

/*
 * Cast a param value through its column's type and render it as to_jsonb
 * does (pull runs under the rendering settings).  A value the type refuses
 * raises the type's own class-22 error, with a context line naming the
 * param.  *cast is the cast value (0 for null).
 */
static Jsonb *
gates_cast_param(KzTableDesc *t, KzColumn *col, const KzPullParam *p, int idx, Datum *cast,
				 GatesCastCache *cache)
{
	Datum		value;
	ErrorContextCallback errcb;
	GatesCastContext cc;
	Jsonb	   *result;

	*cast = (Datum) 0;
	if (p->kind == KZ_PARAM_NULL)
		return kz_jsonb_null();

	cc.idx = idx;
	cc.param = p->name;
	cc.table = t->conf->table_name;
	errcb.callback = gates_cast_error_callback;
	errcb.arg = &cc;
	errcb.previous = error_context_stack;
	error_context_stack = &errcb;

	if (!cache->valid || cache->typid != col->typid || cache->typmod != col->typmod)
	{
		Oid			typinput;

		getTypeInputInfo(col->typid, &typinput, &cache->typioparam);
		fmgr_info(typinput, &cache->input);
		/* to_jsonb is polymorphic: give it an expression to learn the type from */
		fmgr_info(F_TO_JSONB, &cache->to_jsonb);
		cache->to_jsonb.fn_expr = (Node *) makeFuncExpr(F_TO_JSONB, JSONBOID,
														list_make1(makeNullConst(col->typid, col->typmod, InvalidOid)),
														InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
		cache->jsonb = gates_jsonb_kind(col->typid);
		if (cache->jsonb == GATES_JSONB_STRING)
		{
			Oid			typoutput;
			bool		varlena;

			getTypeOutputInfo(col->typid, &typoutput, &varlena);
			fmgr_info(typoutput, &cache->output);
		}
		cache->typid = col->typid;
		cache->typmod = col->typmod;
		cache->valid = true;
	}
	value = InputFunctionCall(&cache->input, p->text, cache->typioparam, col->typmod);
	*cast = value;
	result = gates_to_jsonb(cache, value);

	error_context_stack = errcb.previous;
	return result;
}

void
kz_pull_cast_params(const KzPullRequest *req, KzPullTables *pt)
{
	GatesCastCache cache = {false};
	int			i,
				j;

	for (i = 0; i < req->nbuckets; i++)
	{
		KzScope    *s = &pt->scopes[i];

		s->nparams = req->buckets[i].nparams;
		s->params = palloc(sizeof(KzScopeParam) * Max(s->nparams, 1));
		for (j = 0; j < s->nparams; j++)
		{
			const KzPullParam *p = &req->buckets[i].params[j];
			KzScopeParam *sp = &s->params[j];

			sp->name = p->name;
			sp->value = gates_cast_param(s->table, kz_tabledesc_column(s->table, p->name), p, i,
										 &sp->datum, &cache);
			sp->isnull = (p->kind == KZ_PARAM_NULL);
			sp->scalar = JB_ROOT_IS_SCALAR(sp->value) &&
				JsonbExtractScalar(&sp->value->root, &sp->sv);
		}
	}
}

bool
kz_scope_matches(const KzScope *scope, Jsonb *row)
{
	int			i;

	if (row == NULL)
		return false;
	for (i = 0; i < scope->nparams; i++)
	{
		const KzScopeParam *p = &scope->params[i];
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
