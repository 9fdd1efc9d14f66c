/*-------------------------------------------------------------------------
 *
 * transforms.c
 *	  Field transforms of a push update: increment, arrayUnion, arrayRemove.
 *	  Applied at the arbiter on the current server value, as the caller,
 *	  never compared by HLC and never journaled.
 *
 *	  increment: any numeric column (int2/int4/int8/numeric/float4/float8,
 *	  domains over them included); integer and numeric columns add in
 *	  numeric, so big values stay exact; the sum is assigned back through the
 *	  column type (a fraction onto an integer rounds; overflow is class 22).
 *	  arrayUnion/arrayRemove: any array column whose element type has a
 *	  default equality (the type cache's: its default btree opclass's, else
 *	  its default hash opclass's; composite types of such fields included),
 *	  whichever schema it lives in (ltree, hstore, citext, ...); the values
 *	  are the elements' text forms, converted to the element type (a value
 *	  it refuses is class 22, or 42601 from ltree's and other contrib types'
 *	  input: a verdict, push_decide.c).  Both compare with that equality, as
 *	  PostgreSQL's array_position and array_remove do: arrayUnion keeps the
 *	  first of the elements it finds equal, arrayRemove drops every element
 *	  equal to a value (on citext[] both are case-insensitive).
 *	  A non-numeric or non-array column, or an array of elements that
 *	  cannot be compared (json, xml, point, ...), is CONSTRAINT: a verdict
 *	  for that mutation, never an error of the whole push.
 *
 *	  Every statement here runs as the caller, outside any privileged
 *	  section (decisions/0060): the element type's equality function, the
 *	  element type's input function and the table's policies and triggers
 *	  are code a non-superuser may own, and they run with the caller's
 *	  rights only.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

#include "jsonbutil.h"
#include "push_write.h"
#include "render.h"
#include "spi.h"
#include "transforms.h"
#include "verdict.h"

static bool
is_numeric_type(Oid t)
{
	return t == INT2OID || t == INT4OID || t == INT8OID || t == NUMERICOID ||
		t == FLOAT4OID || t == FLOAT8OID;
}

/*
 * Can arrayUnion and arrayRemove work on the elements of array type
 * arraytype?  Both need the element type's default equality from the type
 * cache, the one the statements below compare with: arrayRemove through
 * array_position (TYPECACHE_EQ_OPR_FINFO), arrayUnion through GROUP BY,
 * whose parser takes the same operator (get_sort_group_operators).  GROUP BY
 * also needs to sort or hash the elements with it; every type with a default
 * equality can do one or the other, except a contrived composite (one field
 * with only btree, another with only hash equality), which PostgreSQL could
 * not group: refused here like a type without equality, for both.  A
 * composite element qualifies when all its fields do (the type cache checks
 * them).  json, xml, point and the like do not.
 */
static bool
array_elements_comparable(Oid arraytype)
{
	Oid			elem = get_element_type(arraytype);
	TypeCacheEntry *tc;

	if (!OidIsValid(elem))
		return false;
	tc = lookup_type_cache(elem, TYPECACHE_EQ_OPR | TYPECACHE_LT_OPR);
	return OidIsValid(tc->eq_opr) &&
		(OidIsValid(tc->lt_opr) || op_hashjoinable(tc->eq_opr, elem));
}

/* The elements e of array expression %s in order o (a subquery's body). */
#define ELEMENTS_SQL \
	"SELECT pg_catalog.unnest(a.a) AS e," \
	" pg_catalog.generate_series(1, pg_catalog.cardinality(a.a)) AS o" \
	" FROM (SELECT %s AS a) a"

/* The transform object {op, by|values} of column col in the mutation. */
static Jsonb *
transform_object(Jsonb *mutation, const char *col)
{
	Jsonb	   *tf = kz_jsonb_get(mutation, "transforms");

	return kz_jsonb_get(tf, col);
}

static char *
increment_by(Jsonb *t)
{
	Jsonb	   *by = kz_jsonb_get(t, "by");
	JsonbValue	v;

	if (by == NULL || !JsonbExtractScalar(&by->root, &v))
		elog(ERROR, "validated increment lost its by");
	return kz_jsonb_scalar_text(&v);
}

static ArrayType *
transform_values(Jsonb *t)
{
	Jsonb	   *vals = kz_jsonb_get(t, "values");
	int			n;
	Datum	   *items;
	int			i;

	if (vals == NULL || !JB_ROOT_IS_ARRAY(vals))
		elog(ERROR, "validated transform lost its values");
	n = JB_ROOT_COUNT(vals);
	items = palloc(sizeof(Datum) * (n + 1));
	for (i = 0; i < n; i++)
	{
		JsonbValue *e = getIthJsonbValueFromContainer(&vals->root, i);

		items[i] = CStringGetTextDatum(kz_jsonb_scalar_text(e));
	}
	return construct_array(items, n, TEXTOID, -1, false, TYPALIGN_INT);
}

const char *
kz_transforms_apply(KzTableDesc *t, const KzMutationReq *m, Jsonb *mutation, Datum *keyvals,
					uint64 *nrows)
{
	int			nk = t->conf->nkeys;
	Oid		   *types = palloc(sizeof(Oid) * (nk + 1));
	Datum	   *values = palloc(sizeof(Datum) * (nk + 1));
	char	   *pred = kz_render_key_predicate(t, 1);
	int			i;

	kz_push_key_params(t, keyvals, 1, types, values);
	*nrows = 0;
	for (i = 0; i < m->ntransforms; i++)
	{
		KzTransformReq *x = &m->transforms[i];
		KzColumn   *c = kz_tabledesc_column(t, x->column);
		Jsonb	   *tf = transform_object(mutation, x->column);
		const char *q = quote_identifier(x->column);
		char	   *sql;
		uint64		n;

		if (x->op == KZ_TF_INCREMENT)
		{
			const char *calc;

			if (!is_numeric_type(c->basetype))
				return KZ_R_CONSTRAINT;
			calc = (c->basetype == FLOAT4OID || c->basetype == FLOAT8OID)
				? "COALESCE(t.%s, 0)::pg_catalog.float8 OPERATOR(pg_catalog.+) $1::pg_catalog.float8"
				: "COALESCE(t.%s, 0)::pg_catalog.numeric OPERATOR(pg_catalog.+) $1::pg_catalog.numeric";
			types[0] = TEXTOID;
			values[0] = CStringGetTextDatum(increment_by(tf));
			sql = psprintf("UPDATE ONLY %s AS t SET %s = %s WHERE %s", t->qualname, q,
						   psprintf(calc, q), pred);
		}
		else
		{
			if (!array_elements_comparable(c->basetype))
				return KZ_R_CONSTRAINT;
			types[0] = TEXTARRAYOID;
			values[0] = PointerGetDatum(transform_values(tf));

			/*
			 * The elements with their positions: unnest() in the select list
			 * (in FROM it would expand a composite element into its fields)
			 * beside the positions 1..n, which run in step with it.  Neither
			 * statement names an equality operator: an operator is found by
			 * name and operand types, and an extension's element type (ltree,
			 * hstore) has none in pg_catalog, while citext would match
			 * text's through its cast.  arrayUnion keeps the first position
			 * of each group of equal elements (GROUP BY hashes or sorts with
			 * the type's default equality; the first position, not the
			 * group's value, so that the element kept is the first one, e.g.
			 * 'Foo' of {Foo} united with "FOO"); arrayRemove drops an element
			 * that array_position finds among the values.
			 */
			if (x->op == KZ_TF_ARRAY_UNION)
			{
				char	   *arr = psprintf("pg_catalog.array_cat(COALESCE(t.%s, '{}'), $1::%s)",
										   q, c->typname_sql);

				sql = psprintf("UPDATE ONLY %s AS t SET %s = (SELECT COALESCE(pg_catalog.array_agg(u.e ORDER BY u.o), '{}')"
							   " FROM (" ELEMENTS_SQL ") u"
							   " WHERE u.o OPERATOR(pg_catalog.=) ANY (SELECT pg_catalog.min(g.o)"
							   " FROM (" ELEMENTS_SQL ") g GROUP BY g.e))::%s WHERE %s",
							   t->qualname, q, arr, arr, c->typname_sql, pred);
			}
			else
				sql = psprintf("UPDATE ONLY %s AS t SET %s = (SELECT COALESCE(pg_catalog.array_agg(u.e ORDER BY u.o), '{}')"
							   " FROM (" ELEMENTS_SQL ") u"
							   " WHERE pg_catalog.array_position($1::%s, u.e) IS NULL)::%s WHERE %s",
							   t->qualname, q, psprintf("COALESCE(t.%s, '{}')", q),
							   c->typname_sql, c->typname_sql, pred);
		}
		n = kz_spi_run(sql, nk + 1, types, values, NULL, false, 0, SPI_OK_UPDATE);
		if (n == 0)
		{
			*nrows = 0;
			return NULL;
		}
		*nrows += n;
	}
	return NULL;
}
