/*-------------------------------------------------------------------------
 *
 * wakeup.c
 *	  Wake-up hints for synced tables.
 *
 *	  A hint carries no row data.  Where Supabase Realtime is installed
 *	  (realtime.send(jsonb, text, text, boolean) exists in a schema owned by
 *	  a superuser) it is a private
 *	  broadcast on topic "kizunasync:<table>" with event "changed" and payload
 *	  {"t": "<table>"}; otherwise, when kizunasync.notify_fallback is on, a
 *	  plain NOTIFY on channel "kizunasync:<table>" (cut to the 63-byte channel
 *	  limit) with payload "changed".  The fallback is off by default because
 *	  PostgreSQL serializes the commits of notifying transactions (the
 *	  notification queue lock is held through commit), which would undo the
 *	  parallel commits of synced writes.  Both are transactional: nothing is delivered unless the
 *	  transaction commits, and a subtransaction that rolls back takes its
 *	  hints with it.
 *
 *	  We remember which tables already got a hint in this transaction and in
 *	  which subtransaction, and forget the entries of a subtransaction that
 *	  aborts, so the next change in the transaction sends the hint again.
 *
 *	  realtime.send runs as the synced table's owner, in the writer's
 *	  session.  PostgreSQL resolves an unqualified relation or type name in
 *	  the session's temporary schema first (or, with our pinned
 *	  "pg_catalog, pg_temp", right after pg_catalog), whatever search_path
 *	  send or what it calls sets, and no supported interface hides that
 *	  schema from a session.  Whatever sits there belongs to the session's
 *	  roles, so a temporary table named like a relation send (or a trigger
 *	  on its table) names unqualified would run its triggers with the
 *	  owner's rights.  We therefore call send only while the session's
 *	  temporary schema holds no object at all; a write made while it holds
 *	  one sends no hint (decisions/0002).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/async.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "errors.h"
#include "identity.h"
#include "pgcompat.h"
#include "wakeup.h"

typedef struct SentHint
{
	char	   *table_name;
	SubTransactionId subid;
} SentHint;

static List *sent_hints = NIL;	/* in TopTransactionContext */
static bool callbacks_registered = false;
static bool notify_fallback = false;	/* GUC kizunasync.notify_fallback */
static int	realtime_state = -1;	/* -1 unknown in this xact, 0 absent, 1 present */
static Oid	realtime_fn = InvalidOid;
static Oid	realtime_nsp = InvalidOid;

static void
wakeup_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			/* the list lived in TopTransactionContext, which is going away */
			sent_hints = NIL;
			realtime_state = -1;
			break;
		default:
			break;
	}
}

static void
wakeup_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						SubTransactionId parentSubid, void *arg)
{
	ListCell   *lc;

	if (sent_hints == NIL)
		return;
	foreach(lc, sent_hints)
	{
		SentHint   *h = (SentHint *) lfirst(lc);

		if (h->subid != mySubid)
			continue;
		if (event == SUBXACT_EVENT_ABORT_SUB)
			sent_hints = foreach_delete_current(sent_hints, lc);
		else if (event == SUBXACT_EVENT_COMMIT_SUB)
			h->subid = parentSubid;
	}
}

/*
 * realtime.send(jsonb, text, text, boolean), when schema realtime is owned
 * by a superuser (Supabase installs it so); a schema planted by a role with
 * CREATE on the database is ignored.  InvalidOid when there is none.
 * Looked up in the catalog by its exact signature, with no privilege check
 * of the writer's (a writer need not see schema realtime): whether the
 * synced table's owner may call it is asked per table
 * (wakeup_owner_may_send).
 */
static Oid
wakeup_realtime_send(void)
{
	Oid			argtypes[4] = {JSONBOID, TEXTOID, TEXTOID, BOOLOID};
	HeapTuple	tp;
	Oid			nspowner;

	realtime_nsp = get_namespace_oid("realtime", true);
	if (!OidIsValid(realtime_nsp))
		return InvalidOid;
	tp = SearchSysCache1(NAMESPACEOID, ObjectIdGetDatum(realtime_nsp));
	if (!HeapTupleIsValid(tp))
		return InvalidOid;
	nspowner = ((Form_pg_namespace) GETSTRUCT(tp))->nspowner;
	ReleaseSysCache(tp);
	if (!superuser_arg(nspowner))
		return InvalidOid;
	return GetSysCacheOid3(PROCNAMEARGSNSP, Anum_pg_proc_oid, CStringGetDatum("send"),
						   PointerGetDatum(buildoidvector(argtypes, 4)),
						   ObjectIdGetDatum(realtime_nsp));
}

static bool
realtime_available(void)
{
	if (realtime_state < 0)
	{
		realtime_fn = wakeup_realtime_send();
		realtime_state = OidIsValid(realtime_fn) ? 1 : 0;
	}
	return realtime_state == 1;
}

/* May owner call realtime.send (USAGE on its schema, EXECUTE on it)? */
static bool
wakeup_owner_may_send(Oid owner)
{
	return kz_namespace_aclcheck(realtime_nsp, owner, ACL_USAGE) == ACLCHECK_OK &&
		kz_proc_aclcheck(realtime_fn, owner, ACL_EXECUTE) == ACLCHECK_OK;
}

/*
 * Does this session's temporary schema hold any object?  Every object
 * created in a schema records a dependency on it (what DISCARD TEMP and the
 * end of the session follow to drop them), and a relation's row type and
 * indexes come with the relation, so one index probe of pg_depend answers.
 * SnapshotSelf: an object this transaction created or dropped a moment ago
 * counts as it is now.  A session that never created a temporary object
 * has no temporary schema to search.
 */
static bool
wakeup_session_has_temp_objects(void)
{
	Oid			temp_nsp;
	Oid			temp_toast_nsp;
	Relation	dep;
	ScanKeyData key[2];
	SysScanDesc scan;
	bool		found;

	GetTempNamespaceState(&temp_nsp, &temp_toast_nsp);
	if (!OidIsValid(temp_nsp))
		return false;
	dep = table_open(DependRelationId, AccessShareLock);
	ScanKeyInit(&key[0], Anum_pg_depend_refclassid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(NamespaceRelationId));
	ScanKeyInit(&key[1], Anum_pg_depend_refobjid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(temp_nsp));
	scan = systable_beginscan(dep, DependReferenceIndexId, true,
							  SnapshotSelf, 2, key);
	found = HeapTupleIsValid(systable_getnext(scan));
	systable_endscan(scan);
	table_close(dep, AccessShareLock);
	return found;
}

/* Errors that end the statement rather than just the hint. */
static bool
wakeup_error_cancels(int sqlerrcode)
{
	return ERRCODE_TO_CATEGORY(sqlerrcode) == ERRCODE_OPERATOR_INTERVENTION ||
		sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE;
}

/*
 * Call realtime.send through fmgr, as the synced table's owner under
 * SECURITY_RESTRICTED_OPERATION with search_path pinned, in a
 * subtransaction: should it fail, the write must not (the hint is lost and
 * clients catch up at their next poll), unless the failure is a cancel or a
 * timeout, which ends the statement as it would anywhere else.
 */
static void
send_realtime(const char *table_name, Oid relid)
{
	StringInfoData topic;
	StringInfoData payload;
	MemoryContext oldcxt = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	Datum		payload_jb;

	initStringInfo(&topic);
	appendStringInfo(&topic, "kizunasync:%s", table_name);
	initStringInfo(&payload);
	appendStringInfoString(&payload, "{\"t\": ");
	escape_json(&payload, table_name);
	appendStringInfoChar(&payload, '}');
	payload_jb = DirectFunctionCall1(jsonb_in, CStringGetDatum(payload.data));

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcxt);
	PG_TRY();
	{
		KzUserSwitch sw;

		kz_as_restricted_begin(&sw, kz_rel_owner(relid), true);
		(void) OidFunctionCall4(realtime_fn, payload_jb,
								CStringGetTextDatum("changed"),
								CStringGetTextDatum(topic.data),
								BoolGetDatum(true));
		kz_as_restricted_end(&sw);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
	}
	PG_CATCH();
	{
		ErrorData  *edata = kz_subxact_catch(oldcxt, oldowner);

		if (wakeup_error_cancels(edata->sqlerrcode))
			ReThrowError(edata);
		ereport(WARNING,
				(errmsg("wake-up hint for synced table \"%s\" was not sent", table_name),
				 errdetail("The call of realtime.send failed: %s.", edata->message)));
		FreeErrorData(edata);
	}
	PG_END_TRY();
}

static void
send_notify(const char *table_name)
{
	char		channel[NAMEDATALEN];

	snprintf(channel, sizeof(channel), "kizunasync:%s", table_name);
	/* keep a multibyte character whole when the name is cut */
	channel[pg_mbcliplen(channel, strlen(channel), NAMEDATALEN - 1)] = '\0';
	Async_Notify(channel, "changed");
}

void
kz_wakeup_define_gucs(void)
{
	DefineCustomBoolVariable("kizunasync.notify_fallback",
							 "Send wake-up hints with NOTIFY where Supabase Realtime is absent.",
							 "Off by default: PostgreSQL serializes the commits of transactions "
							 "that NOTIFY, which would serialize every synced write.",
							 &notify_fallback,
							 false,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);
}

void
kz_wakeup_note(const char *table_name, Oid relid)
{
	ListCell   *lc;
	MemoryContext oldcxt;
	SentHint   *h;

	foreach(lc, sent_hints)
	{
		if (strcmp(((SentHint *) lfirst(lc))->table_name, table_name) == 0)
			return;
	}

	if (!callbacks_registered)
	{
		RegisterXactCallback(wakeup_xact_callback, NULL);
		RegisterSubXactCallback(wakeup_subxact_callback, NULL);
		callbacks_registered = true;
	}

	if (realtime_available())
	{
		/* as the table's owner, within its rights: an owner that may not call send sends nothing */
		if (!wakeup_owner_may_send(kz_rel_owner(relid)))
			return;

		/*
		 * Nothing of the session's may be reachable by name while send runs
		 * as the owner (the header comment).  Not remembered: a change made
		 * after the session dropped its temporary objects sends the hint.
		 */
		if (wakeup_session_has_temp_objects())
			return;
	}
	else if (!notify_fallback)
		return;					/* no channel: nothing to remember */

	/* remembered before sending: a write that send itself causes does not send again */
	oldcxt = MemoryContextSwitchTo(TopTransactionContext);
	h = palloc(sizeof(SentHint));
	h->table_name = pstrdup(table_name);
	h->subid = GetCurrentSubTransactionId();
	sent_hints = lappend(sent_hints, h);
	MemoryContextSwitchTo(oldcxt);

	if (realtime_state == 1)
		send_realtime(table_name, relid);
	else
		send_notify(table_name);
}
