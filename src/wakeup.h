/*-------------------------------------------------------------------------
 *
 * wakeup.h
 *	  Wake-up hints: after a transaction that changed a synced table commits,
 *	  listeners of topic/channel "kizunasync:<table>" hear event "changed".
 *	  Implemented in src/wakeup.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_WAKEUP_H
#define KZ_WAKEUP_H

/*
 * Note that the current (sub)transaction changed synced table table_name.
 * Sends at most one hint per table per transaction; a hint sent inside a
 * subtransaction that rolls back is withdrawn with it and sent again by the
 * next change.  Never raises for a delivery problem (a lost hint costs only
 * freshness), except a cancel or timeout, which ends the statement.
 * relid is the synced table: Realtime is called as its owner, and only
 * while the session's temporary schema holds no object (else no hint).
 */
extern void kz_wakeup_note(const char *table_name, Oid relid);

/* Registers kizunasync.notify_fallback (called from _PG_init). */
extern void kz_wakeup_define_gucs(void);

#endif							/* KZ_WAKEUP_H */
