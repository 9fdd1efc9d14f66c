/*-------------------------------------------------------------------------
 *
 * jsonbutil.c
 *	  Small jsonb helpers (jsonbutil.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "jsonbutil.h"

void
kz_jsonb_push_key(JsonbParseState **ps, const char *key)
{
	kz_jsonb_push_string(ps, WJB_KEY, key);
}

void
kz_jsonb_push_string(JsonbParseState **ps, JsonbIteratorToken tok, const char *s)
{
	JsonbValue	v;

	v.type = jbvString;
	v.val.string.val = (char *) s;
	v.val.string.len = strlen(s);
	pushJsonbValue(ps, tok, &v);
}

void
kz_jsonb_push_kv_string(JsonbParseState **ps, const char *key, const char *s)
{
	kz_jsonb_push_key(ps, key);
	kz_jsonb_push_string(ps, WJB_VALUE, s);
}

void
kz_jsonb_push_kv_bool(JsonbParseState **ps, const char *key, bool b)
{
	JsonbValue	v;

	kz_jsonb_push_key(ps, key);
	v.type = jbvBool;
	v.val.boolean = b;
	pushJsonbValue(ps, WJB_VALUE, &v);
}

void
kz_jsonb_push_jsonb(JsonbParseState **ps, JsonbIteratorToken tok, Jsonb *j)
{
	JsonbValue	v;

	if (j == NULL)
		v.type = jbvNull;
	else if (JB_ROOT_IS_SCALAR(j))
		JsonbExtractScalar(&j->root, &v);
	else
	{
		v.type = jbvBinary;
		v.val.binary.data = &j->root;
		v.val.binary.len = VARSIZE(j) - VARHDRSZ;
	}
	pushJsonbValue(ps, tok, &v);
}

void
kz_jsonb_push_kv_jsonb(JsonbParseState **ps, const char *key, Jsonb *j)
{
	kz_jsonb_push_key(ps, key);
	kz_jsonb_push_jsonb(ps, WJB_VALUE, j);
}

char *
kz_jsonb_text(JsonbValue *v)
{
	switch (v->type)
	{
		case jbvNull:
			return NULL;
		case jbvString:
			return pnstrdup(v->val.string.val, v->val.string.len);
		case jbvNumeric:
			return DatumGetCString(DirectFunctionCall1(numeric_out,
													   NumericGetDatum(v->val.numeric)));
		case jbvBool:
			return pstrdup(v->val.boolean ? "true" : "false");
		default:
			{
				Jsonb	   *j = JsonbValueToJsonb(v);

				return JsonbToCString(NULL, &j->root, VARSIZE(j));
			}
	}
}

char *
kz_jsonb_scalar_text(JsonbValue *v)
{
	if (v->type == jbvNull || v->type == jbvArray || v->type == jbvObject ||
		v->type == jbvBinary)
		return NULL;
	return kz_jsonb_text(v);
}

Jsonb *
kz_jsonb_get(Jsonb *obj, const char *key)
{
	JsonbValue *v;

	if (obj == NULL || !JB_ROOT_IS_OBJECT(obj) || JB_ROOT_IS_SCALAR(obj))
		return NULL;
	v = getKeyJsonValueFromContainer(&obj->root, key, strlen(key), NULL);
	if (v == NULL)
		return NULL;
	return JsonbValueToJsonb(v);
}

bool
kz_jsonb_has_key(Jsonb *obj, const char *key)
{
	bool		found;

	(void) kz_jsonb_key_text(obj, key, &found);
	return found;
}

char *
kz_jsonb_key_text(Jsonb *obj, const char *key, bool *found)
{
	JsonbValue *v;

	*found = false;
	if (obj == NULL || !JB_ROOT_IS_OBJECT(obj) || JB_ROOT_IS_SCALAR(obj))
		return NULL;
	v = getKeyJsonValueFromContainer(&obj->root, key, strlen(key), NULL);
	*found = (v != NULL);
	return v ? kz_jsonb_text(v) : NULL;
}

Jsonb *
kz_jsonb_null(void)
{
	JsonbValue	v;

	v.type = jbvNull;
	return JsonbValueToJsonb(&v);
}
