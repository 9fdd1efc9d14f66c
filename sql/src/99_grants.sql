-- ---------------------------------------------------------------------------
-- Privileges (last part of the install script).  Clients reach the extension
-- only through the granted RPCs.  Every function is created with EXECUTE
-- revoked from PUBLIC here; a part that adds an API function grants it
-- explicitly below.
-- ---------------------------------------------------------------------------
REVOKE ALL ON ALL TABLES IN SCHEMA kizunasync FROM PUBLIC, anon, authenticated;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA kizunasync FROM PUBLIC, anon, authenticated;
REVOKE ALL ON ALL ROUTINES IN SCHEMA kizunasync FROM PUBLIC, anon, authenticated;
GRANT USAGE ON SCHEMA kizunasync TO authenticated, service_role;

-- API grants.  Parts append their grants through this DO block's list so the
-- grant set lives in one place.
DO $kz$
DECLARE
	f record;
BEGIN
	FOR f IN
		SELECT p.oid::regprocedure AS sig, p.proname
		  FROM pg_catalog.pg_proc p
		 WHERE p.pronamespace = 'kizunasync'::regnamespace
		   AND p.proname IN ('pull', 'push', 'attachment_confirm',
							 'attachment_metadata', 'attachment_vacuum')
	LOOP
		EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO authenticated, service_role', f.sig);
	END LOOP;
	FOR f IN
		SELECT p.oid::regprocedure AS sig
		  FROM pg_catalog.pg_proc p
		 WHERE p.pronamespace = 'kizunasync'::regnamespace
		   AND p.proname IN ('reap_tombstones', 'compact_changelog', 'prune_clients',
							 'schedule_jobs')
	LOOP
		EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO service_role', f.sig);
	END LOOP;
END
$kz$;
