/*-------------------------------------------------------------------------
 *
 * identity.c
 *	  The caller, the JWT claims, and running code as somebody (identity.h,
 *	  decisions/0060-security-model.md).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_proc.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "utils/regproc.h"
#include "utils/syscache.h"
#include "utils/uuid.h"

#include "bookkeeping.h"
#include "capture_batch.h"
#include "entry.h"
#include "errors.h"
#include "identity.h"

/* The search_path of privileged sections: pg_temp last, so it shadows nothing. */
#define KZ_PINNED_SEARCH_PATH	"pg_catalog, pg_temp"

static void
identity_refuse_secdef(Oid fnoid)
{
	HeapTuple	tp;
	bool		secdef;

	if (!OidIsValid(fnoid))
		return;
	tp = SearchSysCache1(PROCOID, ObjectIdGetDatum(fnoid));
	if (!HeapTupleIsValid(tp))
		elog(ERROR, "cache lookup failed for function %u", fnoid);
	secdef = ((Form_pg_proc) GETSTRUCT(tp))->prosecdef;
	ReleaseSysCache(tp);

	/*
	 * 0.1.0 declared the entry points SECURITY DEFINER.  This library runs
	 * every application statement as the current user, which inside such a
	 * declaration is the owner: refuse until ALTER EXTENSION ... UPDATE has
	 * replaced the declarations.
	 */
	if (secdef)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the SQL objects of extension \"kizunasync\" are older than its library"),
				 errdetail("Function %s is declared SECURITY DEFINER; this library runs every entry point as its caller.",
						   format_procedure(fnoid)),
				 errhint("Run ALTER EXTENSION kizunasync UPDATE.")));
}

static void
identity_entry_checks(FunctionCallInfo fcinfo, const char *fname, bool refuse_sro,
					  KzCaller *caller)
{
	identity_refuse_secdef(fcinfo->flinfo ? fcinfo->flinfo->fn_oid : InvalidOid);
	kz_entry_check_layout();
	if (refuse_sro && InSecurityRestrictedOperation())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("%s cannot run inside a security-restricted operation", fname),
				 errdetail("REFRESH MATERIALIZED VIEW, ANALYZE, VACUUM, CREATE INDEX and autovacuum "
						   "evaluate view and index expressions as their owner with restricted rights.")));
	caller->role = GetUserId();
}

void
kz_entry(FunctionCallInfo fcinfo, const char *fname, bool refuse_sro, KzCaller *caller)
{
	identity_entry_checks(fcinfo, fname, refuse_sro, caller);
	/* what this transaction's statements captured is recorded before we look */
	kz_capture_batch_flush();
}

void
kz_entry_reader(FunctionCallInfo fcinfo, const char *fname, bool refuse_sro, KzCaller *caller)
{
	identity_entry_checks(fcinfo, fname, refuse_sro, caller);

	/*
	 * A pull sees this transaction's entries as in flight whether they are
	 * recorded or not, so recording the deferred ones now would only hold
	 * their seqs in flight until the transaction ends.
	 */
	kz_capture_batch_flush_early();
}

/* The entry point running in this backend, or NULL. */
static const char *entry_running = NULL;

Datum
kz_entry_guarded(FunctionCallInfo fcinfo, const char *fname, KzEntryBody body)
{
	volatile Datum result = (Datum) 0;

	if (entry_running != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s cannot be called while %s is running", fname, entry_running),
				 errdetail("Application code that %s ran (a trigger, a policy, a column default or a function of a column type) called it.",
						   entry_running)));
	entry_running = fname;
	PG_TRY();
	{
		result = body(fcinfo);
	}
	PG_FINALLY();
	{
		entry_running = NULL;
	}
	PG_END_TRY();
	return result;
}

void
kz_entry_trigger(Oid tgfoid)
{
	identity_refuse_secdef(tgfoid);
}

/* ------------------------------------------------------------ switching */

static void
identity_switch(KzUserSwitch *s, Oid role, int extra_sec, bool pin_path)
{
	GetUserIdAndSecContext(&s->saved_userid, &s->saved_sec);
	SetUserIdAndSecContext(role, s->saved_sec | SECURITY_LOCAL_USERID_CHANGE | extra_sec);
	s->switched = true;
	s->guc_level = 0;
	if (pin_path)
	{
		s->guc_level = NewGUCNestLevel();
		(void) set_config_option("search_path", KZ_PINNED_SEARCH_PATH,
								 PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	}
}

static void
identity_restore(KzUserSwitch *s)
{
	if (!s->switched)
		return;
	if (s->guc_level > 0)
		AtEOXact_GUC(false, s->guc_level);
	SetUserIdAndSecContext(s->saved_userid, s->saved_sec);
	s->switched = false;
}

void
kz_priv_begin(KzUserSwitch *s)
{
	identity_switch(s, kz_extension_owner(), SECURITY_RESTRICTED_OPERATION, true);
}

void
kz_priv_end(KzUserSwitch *s)
{
	identity_restore(s);
}

void
kz_as_restricted_begin(KzUserSwitch *s, Oid role, bool pin_path)
{
	identity_switch(s, role, SECURITY_RESTRICTED_OPERATION, pin_path);
}

void
kz_as_restricted_end(KzUserSwitch *s)
{
	identity_restore(s);
}

Oid
kz_namespace_owner(const char *name)
{
	Oid			nsp = get_namespace_oid(name, true);
	HeapTuple	tp;
	Oid			owner;

	if (!OidIsValid(nsp))
		return InvalidOid;
	tp = SearchSysCache1(NAMESPACEOID, ObjectIdGetDatum(nsp));
	if (!HeapTupleIsValid(tp))
		elog(ERROR, "cache lookup failed for namespace %u", nsp);
	owner = ((Form_pg_namespace) GETSTRUCT(tp))->nspowner;
	ReleaseSysCache(tp);
	return owner;
}

Oid
kz_extension_owner(void)
{
	Oid			owner = kz_namespace_owner(KZ_SCHEMA);

	if (!OidIsValid(owner))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_SCHEMA),
				 errmsg("schema \"%s\" does not exist", KZ_SCHEMA),
				 errhint("Reinstall the extension.")));
	return owner;
}

Oid
kz_rel_owner(Oid relid)
{
	HeapTuple	tp = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			owner;

	if (!HeapTupleIsValid(tp))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tp))->relowner;
	ReleaseSysCache(tp);
	return owner;
}

/* ------------------------------------------------------------ claims */

/* Text value of a top-level string claim, or NULL. */
static char *
identity_claim_text(const char *claim)
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

char *
kz_jwt_sub(void)
{
	const char *legacy = GetConfigOption("request.jwt.claim.sub", true, false);
	char	   *sub;

	if (legacy != NULL && legacy[0] != '\0')
		sub = pstrdup(legacy);
	else
		sub = identity_claim_text("sub");
	if (sub != NULL && strlen(sub) > KZ_MAX_SUB_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION),
				 errmsg("JWT claim \"sub\" is longer than %d bytes", KZ_MAX_SUB_BYTES),
				 errdetail("It starts with %s.",
						   kz_quote_for_message(sub, strlen(sub), false))));
	return sub;
}

bool
kz_jwt_session_id(pg_uuid_t *sid)
{
	char	   *s = identity_claim_text("session_id");
	pg_uuid_t  *u;

	if (s == NULL)
		return false;
	u = DatumGetUUIDP(DirectFunctionCall1(uuid_in, CStringGetDatum(s)));
	memcpy(sid, u, sizeof(pg_uuid_t));
	return true;
}

char *
kz_jwt_role(void)
{
	return identity_claim_text("role");
}
