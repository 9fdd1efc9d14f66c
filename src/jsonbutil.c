/*-------------------------------------------------------------------------
 *
 * jsonbutil.c
 *	  Small jsonb helpers shared by pull and push (see jsonbutil.h).
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
	JsonbValue	k;

	k.type = jbvString;
	k.val.string.val = (char *) key;
	k.val.string.len = strlen(key);
	pushJsonbValue(ps, WJB_KEY, &k);
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
