/*-------------------------------------------------------------------------
 *
 * wakeup.c
 *	  Wake-up hints for synced tables.
 *
 *	  A hint carries no row data.  Where Supabase Realtime is installed
 *	  (realtime.send(jsonb, text, text, boolean) exists) it is a private
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
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/async.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "nodes/pg_list.h"
#include "nodes/value.h"
#include "parser/parse_func.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/memutils.h"
#include "utils/regproc.h"

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

static bool
realtime_available(void)
{
	if (realtime_state < 0)
	{
		Oid			argtypes[4] = {JSONBOID, TEXTOID, TEXTOID, BOOLOID};
		Oid			fn;

		/* missing_ok: no realtime schema or no such function gives InvalidOid */
		fn = LookupFuncName(list_make2(makeString("realtime"), makeString("send")),
							4, argtypes, true);
		realtime_state = OidIsValid(fn) ? 1 : 0;
	}
	return realtime_state == 1;
}

static void
send_realtime(const char *table_name)
{
	StringInfoData topic;
	StringInfoData payload;
	Oid			argtypes[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		values[3];

	initStringInfo(&topic);
	appendStringInfo(&topic, "kizunasync:%s", table_name);
	initStringInfo(&payload);
	appendStringInfoString(&payload, "{\"t\": ");
	escape_json(&payload, table_name);
	appendStringInfoChar(&payload, '}');

	values[0] = CStringGetTextDatum(payload.data);
	values[1] = CStringGetTextDatum("changed");
	values[2] = CStringGetTextDatum(topic.data);

	/*
	 * realtime.send is documented never to raise; should it fail anyway, the
	 * write that triggered the hint must not: run it in a subtransaction and
	 * turn a failure into a WARNING (the hint is lost, clients catch up at
	 * their next poll).
	 */
	{
		MemoryContext oldcxt = CurrentMemoryContext;
		ResourceOwner oldowner = CurrentResourceOwner;

		BeginInternalSubTransaction(NULL);
		MemoryContextSwitchTo(oldcxt);
		PG_TRY();
		{
			if (SPI_connect() != SPI_OK_CONNECT)
				elog(ERROR, "kizunasync: SPI_connect failed");
			if (SPI_execute_with_args("SELECT realtime.send($1::jsonb, $2, $3, true)",
									  3, argtypes, values, NULL, false, 0) != SPI_OK_SELECT)
				elog(ERROR, "kizunasync: realtime.send failed");
			SPI_finish();
			ReleaseCurrentSubTransaction();
			MemoryContextSwitchTo(oldcxt);
			CurrentResourceOwner = oldowner;
		}
		PG_CATCH();
		{
			ErrorData  *edata;

			MemoryContextSwitchTo(oldcxt);
			edata = CopyErrorData();
			FlushErrorState();
			RollbackAndReleaseCurrentSubTransaction();
			MemoryContextSwitchTo(oldcxt);
			CurrentResourceOwner = oldowner;
			ereport(WARNING,
					(errmsg("kizunasync: wake-up hint for table \"%s\" was not sent", table_name),
					 errdetail("realtime.send failed: %s", edata->message)));
			FreeErrorData(edata);
		}
		PG_END_TRY();
	}
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
kz_wakeup_note(const char *table_name)
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
		send_realtime(table_name);
	else if (notify_fallback)
		send_notify(table_name);
	else
		return;					/* no channel: nothing to remember */

	oldcxt = MemoryContextSwitchTo(TopTransactionContext);
	h = palloc(sizeof(SentHint));
	h->table_name = pstrdup(table_name);
	h->subid = GetCurrentSubTransactionId();
	sent_hints = lappend(sent_hints, h);
	MemoryContextSwitchTo(oldcxt);
}
