/*-------------------------------------------------------------------------
 *
 * verdict.c
 *	  Push verdicts and response envelopes (verdict.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "jsonbutil.h"
#include "verdict.h"

Jsonb *
kz_verdict_jsonb(const KzVerdict *v)
{
	JsonbParseState *st = NULL;
	JsonbValue *res;

	pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
	kz_jsonb_push_kv_string(&st, "mutation_id", v->mutation_id);
	if (!v->applied)
		kz_jsonb_push_kv_string(&st, "reason", v->reason);
	if (v->has_server_row || !v->applied)
		kz_jsonb_push_kv_jsonb(&st, "server_row", v->server_row);
	kz_jsonb_push_kv_string(&st, "verdict", v->applied ? "applied" : "rejected");
	res = pushJsonbValue(&st, WJB_END_OBJECT, NULL);
	return JsonbValueToJsonb(res);
}

void
kz_verdict_copy_to(KzVerdict *v, MemoryContext cxt)
{
	if (v->server_row != NULL)
	{
		Size		len = VARSIZE(v->server_row);
		Jsonb	   *copy = MemoryContextAlloc(cxt, len);

		memcpy(copy, v->server_row, len);
		v->server_row = copy;
	}
}

Jsonb *
kz_verdicts_response(const KzVerdict *vs, int n)
{
	JsonbParseState *st = NULL;
	JsonbValue *res;
	int			i;

	pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
	kz_jsonb_push_key(&st, "verdicts");
	pushJsonbValue(&st, WJB_BEGIN_ARRAY, NULL);
	for (i = 0; i < n; i++)
		kz_jsonb_push_jsonb(&st, WJB_ELEM, kz_verdict_jsonb(&vs[i]));
	pushJsonbValue(&st, WJB_END_ARRAY, NULL);
	res = pushJsonbValue(&st, WJB_END_OBJECT, NULL);
	return JsonbValueToJsonb(res);
}

Jsonb *
kz_batch_abort_response(const KzVerdict *v)
{
	JsonbParseState *st = NULL;
	JsonbValue *res;

	pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
	kz_jsonb_push_key(&st, "batch");
	pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
	kz_jsonb_push_kv_string(&st, "offender_mutation_id", v->mutation_id);
	kz_jsonb_push_kv_string(&st, "outcome", "aborted");
	kz_jsonb_push_kv_string(&st, "reason", v->reason);
	kz_jsonb_push_kv_jsonb(&st, "server_row", v->server_row);
	pushJsonbValue(&st, WJB_END_OBJECT, NULL);
	res = pushJsonbValue(&st, WJB_END_OBJECT, NULL);
	return JsonbValueToJsonb(res);
}

Jsonb *
kz_push_signal_response(void)
{
	JsonbParseState *st = NULL;
	JsonbValue *res;

	pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
	kz_jsonb_push_key(&st, "signal");
	pushJsonbValue(&st, WJB_BEGIN_OBJECT, NULL);
	kz_jsonb_push_kv_string(&st, "type", "RESET_REQUIRED");
	pushJsonbValue(&st, WJB_END_OBJECT, NULL);
	res = pushJsonbValue(&st, WJB_END_OBJECT, NULL);
	return JsonbValueToJsonb(res);
}
