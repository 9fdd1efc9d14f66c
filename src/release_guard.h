/*-------------------------------------------------------------------------
 *
 * release_guard.h
 *	  Refuses to run the SQL-language SECURITY DEFINER functions an older
 *	  release left in the kizunasync schema (decisions/0080, "The library and
 *	  older SQL objects").  Implemented in src/release_guard.c.
 *
 *	  0.1.0 declared sync_table, unsync_table and schedule_jobs in PL/pgSQL,
 *	  SECURITY DEFINER, with search_path = '': PostgreSQL still searches the
 *	  caller's pg_temp first for types and relations there, so a caller's
 *	  temporary domain ran its CHECK as the extension owner.  No release
 *	  since has an SQL-language function in the schema; any found is an
 *	  older release's, waiting for ALTER EXTENSION ... UPDATE.  Once this
 *	  library is loaded in a backend (any call of its functions, any write
 *	  to a synced table, or session_preload_libraries), an fmgr hook refuses
 *	  to start such a function (55000), before its body is compiled.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KZ_RELEASE_GUARD_H
#define KZ_RELEASE_GUARD_H

/* From _PG_init: installs the fmgr hook (chained to any earlier one). */
extern void kz_release_guard_init(void);

#endif							/* KZ_RELEASE_GUARD_H */
