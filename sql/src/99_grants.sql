-- ---------------------------------------------------------------------------
-- Privileges (last part of the install script).  Clients reach the extension
-- only through the granted RPCs: anon gets nothing at all (not even USAGE),
-- authenticated gets USAGE and EXECUTE on the client RPCs, service_role also
-- the operator functions and the status view.  Internal helpers and every
-- bookkeeping table stay private to the extension owner.
-- ---------------------------------------------------------------------------
REVOKE ALL ON ALL TABLES IN SCHEMA kizunasync FROM PUBLIC, anon, authenticated;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA kizunasync FROM PUBLIC, anon, authenticated;
REVOKE ALL ON ALL ROUTINES IN SCHEMA kizunasync FROM PUBLIC, anon, authenticated;
GRANT USAGE ON SCHEMA kizunasync TO authenticated, service_role;

DO $kz$
DECLARE
	f record;
BEGIN
	-- client RPCs
	FOR f IN
		SELECT p.oid::regprocedure AS sig
		  FROM pg_catalog.pg_proc p
		 WHERE p.pronamespace = 'kizunasync'::regnamespace
		   AND p.proname IN ('pull', 'push', 'attachment_confirm',
							 'attachment_metadata', 'attachment_vacuum')
	LOOP
		EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO authenticated, service_role', f.sig);
	END LOOP;
	-- operator functions
	FOR f IN
		SELECT p.oid::regprocedure AS sig
		  FROM pg_catalog.pg_proc p
		 WHERE p.pronamespace = 'kizunasync'::regnamespace
		   AND p.proname IN ('reap_tombstones', 'compact_changelog', 'prune_clients',
							 'schedule_jobs')
	LOOP
		EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO service_role', f.sig);
	END LOOP;
END
$kz$;
GRANT SELECT ON kizunasync.status TO service_role;
