/*-------------------------------------------------------------------------
 *
 * identity.c
 *	  The caller's role and JWT claims (see identity.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "utils/uuid.h"

#include "identity.h"

Oid
kz_caller_role(void)
{
	/*
	 * Inside a SECURITY DEFINER function the current user is the owner; the
	 * outer user id is what SET [LOCAL] ROLE established for the request (or
	 * the session user when no role was set).
	 */
	return GetOuterUserId();
}

/* Text value of a top-level string claim, or NULL. */
static char *
claim_text(const char *claim)
{
	const char *raw = GetConfigOption("request.jwt.claims", true, false);
	Jsonb	   *jb;
	JsonbValue	key;
	JsonbValue *val;

	if (raw == NULL || raw[0] == '\0')
		return NULL;
	jb = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(raw)));
	if (!JB_ROOT_IS_OBJECT(jb))
		return NULL;
	key.type = jbvString;
	key.val.string.val = (char *) claim;
	key.val.string.len = strlen(claim);
	val = findJsonbValueFromContainer(&jb->root, JB_FOBJECT, &key);
	if (val == NULL || val->type != jbvString || val->val.string.len == 0)
		return NULL;
	return pnstrdup(val->val.string.val, val->val.string.len);
}

static void
text_to_uuid(const char *s, pg_uuid_t *out)
{
	pg_uuid_t  *u = DatumGetUUIDP(DirectFunctionCall1(uuid_in, CStringGetDatum(s)));

	memcpy(out, u, sizeof(pg_uuid_t));
}

bool
kz_caller_uid(pg_uuid_t *uid)
{
	const char *legacy = GetConfigOption("request.jwt.claim.sub", true, false);
	char	   *sub;

	/* Supabase's auth.uid(): the legacy per-claim GUC wins when set. */
	if (legacy != NULL && legacy[0] != '\0')
		sub = pstrdup(legacy);
	else
		sub = claim_text("sub");
	if (sub == NULL)
		return false;
	text_to_uuid(sub, uid);
	return true;
}

bool
kz_jwt_session_id(pg_uuid_t *sid)
{
	char	   *s = claim_text("session_id");

	if (s == NULL)
		return false;
	text_to_uuid(s, sid);
	return true;
}

void
kz_as_caller_begin(KzAsCaller *save)
{
	GetUserIdAndSecContext(&save->saved_userid, &save->saved_sec_context);
	SetUserIdAndSecContext(kz_caller_role(),
						   save->saved_sec_context | SECURITY_LOCAL_USERID_CHANGE);
}

void
kz_as_caller_end(KzAsCaller *save)
{
	SetUserIdAndSecContext(save->saved_userid, save->saved_sec_context);
}
