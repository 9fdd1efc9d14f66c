-- kizunasync: close 0.1.0's SQL-language SECURITY DEFINER functions in a
-- database that has not run ALTER EXTENSION kizunasync UPDATE yet
-- (decisions/0080, "The library and older SQL objects"; issue 23 item 1).
--
-- 0.1.0 declared sync_table, unsync_table and schedule_jobs in PL/pgSQL,
-- SECURITY DEFINER, with search_path = ''.  PostgreSQL still searches the
-- caller's pg_temp first for types and relations in such a function, so a
-- caller's temporary domain (say pg_temp.jsonb with a CHECK that calls the
-- caller's function) runs as the extension owner, a superuser.  This holds
-- with every library, the 0.1.0 one included; a newer library refuses these
-- functions only in backends where it is loaded.
--
-- Run as a superuser in every database whose kizunasync is at 0.1.0, now,
-- and at the latest before installing a newer release's files:
--
--     psql -d DB -f scripts/harden-0.1.0.sql
--
-- It turns every SQL-language function of the extension SECURITY INVOKER and
-- pins its search_path to pg_catalog, pg_temp.  sync_table, unsync_table and
-- schedule_jobs then run as their caller and fail on the bookkeeping's
-- privileges until the update; pull, push and capture are not affected (C).
-- ALTER EXTENSION kizunasync UPDATE replaces every one of these functions,
-- so the updated database is the same as a fresh install.  Run again, it
-- changes nothing; on any other version it does nothing.
\set ON_ERROR_STOP 1
DO $harden$
DECLARE
	f pg_catalog.regprocedure;
	n integer := 0;
BEGIN
	IF (SELECT e.extversion FROM pg_catalog.pg_extension e
		 WHERE e.extname OPERATOR(pg_catalog.=) 'kizunasync')
	   IS DISTINCT FROM '0.1.0' THEN
		RAISE NOTICE 'kizunasync is not at version 0.1.0 in this database: nothing to do';
		RETURN;
	END IF;
	FOR f IN
		SELECT p.oid::pg_catalog.regprocedure
		  FROM pg_catalog.pg_depend d
		  JOIN pg_catalog.pg_extension e ON e.oid OPERATOR(pg_catalog.=) d.refobjid
		  JOIN pg_catalog.pg_proc p ON p.oid OPERATOR(pg_catalog.=) d.objid
		  JOIN pg_catalog.pg_language l ON l.oid OPERATOR(pg_catalog.=) p.prolang
		 WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
		   AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
		   AND d.deptype OPERATOR(pg_catalog.=) 'e'
		   AND e.extname OPERATOR(pg_catalog.=) 'kizunasync'
		   AND l.lanname OPERATOR(pg_catalog.<>) ALL (ARRAY['c', 'internal'])
		 ORDER BY 1
	LOOP
		EXECUTE pg_catalog.format(
			'ALTER FUNCTION %s SECURITY INVOKER SET search_path = pg_catalog, pg_temp', f);
		n := n + 1;
	END LOOP;
	RAISE NOTICE 'kizunasync 0.1.0: % SQL-language functions now run as their caller', n;
END
$harden$;
