/*-------------------------------------------------------------------------
 *
 * bucketlabel.c
 *	  Bucket labels and the bucket column types (bucketlabel.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "access/transam.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "parser/parse_coerce.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/typcache.h"

#include "bucketlabel.h"
#include "pgcompat.h"

/* ------------------------------------------------------------ kinds */

/*
 * Does to_jsonb render a value of this (non-built-in, scalar) type through
 * a cast to json?  The same test to_jsonb makes (jsonb.c's categorization:
 * only types outside the built-in range, only a cast to json).
 */
static bool
label_cast_to_json(Oid base)
{
	Oid			castfunc;

	if (base < FirstNormalObjectId)
		return false;
	return find_coercion_pathway(JSONOID, base, COERCION_EXPLICIT, &castfunc) == COERCION_PATH_FUNC &&
		OidIsValid(castfunc);
}

KzLabelKind
kz_label_kind(Oid typid)
{
	Oid			base = getBaseType(typid);

	switch (base)
	{
		case BOOLOID:
			return KZ_LABEL_BOOL;
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case FLOAT4OID:
		case FLOAT8OID:
		case NUMERICOID:
			return KZ_LABEL_NUMBER;
		case JSONOID:
		case JSONBOID:
			return KZ_LABEL_JSON;
		default:
			break;
	}
	if (OidIsValid(get_element_type(base)) || type_is_rowtype(base))
		return KZ_LABEL_CONTAINER;
	return label_cast_to_json(base) ? KZ_LABEL_JSON : KZ_LABEL_STRING;
}

/* ------------------------------------------------------------ labels */

/* A numeric in its shortest exact decimal: 1.0 -> 1, -0.00 -> 0. */
static Numeric
label_trim(Numeric n)
{
	return DatumGetNumeric(DirectFunctionCall1(numeric_trim_scale, NumericGetDatum(n)));
}

static char *
label_number_text(Numeric n)
{
	return DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(label_trim(n))));
}

/*
 * Canonical JSON text of a container: jsonb already orders object keys and
 * drops duplicates, so only numbers need a canonical form.
 */
static char *
label_container_text(Jsonb *j)
{
	JsonbIterator *it = JsonbIteratorInit(&j->root);
	JsonbParseState *ps = NULL;
	JsonbValue	v;
	JsonbValue *res = NULL;
	JsonbIteratorToken tok;
	Jsonb	   *canon;

	while ((tok = JsonbIteratorNext(&it, &v, false)) != WJB_DONE)
	{
		bool		scalar = tok == WJB_KEY || tok == WJB_VALUE || tok == WJB_ELEM;

		if (scalar && v.type == jbvNumeric)
			v.val.numeric = label_trim(v.val.numeric);
		res = pushJsonbValue(&ps, tok, scalar ? &v : NULL);
	}
	canon = JsonbValueToJsonb(res);
	return JsonbToCString(NULL, &canon->root, VARSIZE(canon));
}

char *
kz_label_of(Jsonb *rendered, KzLabelKind kind)
{
	JsonbValue	v;
	StringInfoData buf;

	if (!JB_ROOT_IS_SCALAR(rendered))
		return label_container_text(rendered);
	if (!JsonbExtractScalar(&rendered->root, &v))
		elog(ERROR, "a scalar jsonb holds no scalar");
	switch (v.type)
	{
		case jbvNull:
			return NULL;
		case jbvBool:
			return pstrdup(v.val.boolean ? "true" : "false");
		case jbvNumeric:
			return label_number_text(v.val.numeric);
		case jbvString:
			if (kind != KZ_LABEL_JSON)
				return pnstrdup(v.val.string.val, v.val.string.len);
			initStringInfo(&buf);
			escape_json(&buf, pnstrdup(v.val.string.val, v.val.string.len));
			return buf.data;
		default:
			elog(ERROR, "unexpected jsonb scalar type %d", (int) v.type);
	}
	return NULL;				/* keep compiler quiet */
}

/* Is s a number as numeric_out writes one (what a NUMBER label holds)? */
static bool
label_is_plain_number(const char *s)
{
	const char *p = s;

	if (*p == '-')
		p++;
	if (!isdigit((unsigned char) *p))
		return false;
	while (isdigit((unsigned char) *p))
		p++;
	if (*p == '.')
	{
		p++;
		if (!isdigit((unsigned char) *p))
			return false;
		while (isdigit((unsigned char) *p))
			p++;
	}
	return *p == '\0';
}

static Jsonb *
label_string_value(const char *s)
{
	JsonbValue	v;

	v.type = jbvString;
	v.val.string.val = (char *) s;
	v.val.string.len = strlen(s);
	return JsonbValueToJsonb(&v);
}

Jsonb *
kz_label_value(const char *label, KzLabelKind kind)
{
	switch (kind)
	{
		case KZ_LABEL_NUMBER:
			if (!label_is_plain_number(label))
				return label_string_value(label);	/* NaN, Infinity */
			/* FALLTHROUGH */
		case KZ_LABEL_BOOL:
		case KZ_LABEL_CONTAINER:
		case KZ_LABEL_JSON:
			if (kz_json_text_valid(label))
				return DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(label)));
			/* a label of an older build (bucketlabel.h): its string */
			return label_string_value(label);
		case KZ_LABEL_STRING:
			break;
	}
	return label_string_value(label);
}

char *
kz_label_upgrade(const char *old, KzLabelKind kind, char **string_reading)
{
	*string_reading = NULL;
	switch (kind)
	{
		case KZ_LABEL_STRING:
		case KZ_LABEL_BOOL:
			return pstrdup(old);
		case KZ_LABEL_NUMBER:
			if (!label_is_plain_number(old))
				return pstrdup(old);	/* NaN, Infinity, or not written as a number */
			return label_number_text(DatumGetNumeric(DirectFunctionCall3(numeric_in,
																		 CStringGetDatum(old),
																		 ObjectIdGetDatum(InvalidOid),
																		 Int32GetDatum(-1))));
		case KZ_LABEL_CONTAINER:
			if (!kz_json_text_valid(old))
				return pstrdup(old);	/* not written by the rendering */
			return kz_label_of(DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(old))),
							   kind);
		case KZ_LABEL_JSON:

			/*
			 * An old label is the string itself for a string and JSON text
			 * for anything else; JSON null had no label.  Text that is not
			 * JSON, and "null", can only have been a string.
			 */
			if (strcmp(old, "null") == 0 || !kz_json_text_valid(old))
				return kz_label_of(label_string_value(old), kind);
			*string_reading = kz_label_of(label_string_value(old), kind);
			return kz_label_of(DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(old))),
							   kind);
	}
	return pstrdup(old);
}

/* ------------------------------------------------------------ refusals */

/*
 * A built-in type whose rendering reads more than the value and the pinned
 * settings: money (lc_monetary), the reg* types and aclitem (object and
 * role names, which also depend on search_path and change with a rename).
 */
static const char *
label_unstable_type(Oid base)
{
	switch (base)
	{
		case CASHOID:
			return "lc_monetary";
		case REGCLASSOID:
		case REGTYPEOID:
		case REGPROCOID:
		case REGPROCEDUREOID:
		case REGOPEROID:
		case REGOPERATOROID:
		case REGCONFIGOID:
		case REGDICTIONARYOID:
		case REGNAMESPACEOID:
		case REGROLEOID:
		case REGCOLLATIONOID:
		case ACLITEMOID:
			return "search_path and the current names of objects and roles";
		default:
			return NULL;
	}
}

Oid
kz_label_refused_type(Oid typid, const char **why)
{
	Oid			base = getBaseType(typid);
	Oid			inner = InvalidOid;

	check_stack_depth();
	*why = label_unstable_type(base);
	if (*why != NULL)
		return base;
	if (OidIsValid(get_element_type(base)))
		return kz_label_refused_type(get_element_type(base), why);
	if (type_is_range(base))
		return kz_label_refused_type(get_range_subtype(base), why);
	if (type_is_multirange(base))
		return kz_label_refused_type(get_multirange_range(base), why);
	if (type_is_rowtype(base))
	{
		TupleDesc	desc = lookup_rowtype_tupdesc(base, -1);
		int			i;

		for (i = 0; i < desc->natts && !OidIsValid(inner); i++)
			if (!TupleDescAttr(desc, i)->attisdropped)
				inner = kz_label_refused_type(TupleDescAttr(desc, i)->atttypid, why);
		ReleaseTupleDesc(desc);
	}
	return inner;
}
