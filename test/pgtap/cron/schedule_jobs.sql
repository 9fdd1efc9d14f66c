-- kizunasync.schedule_jobs() with pg_cron installed (database kz_cron, the
-- cluster's cron.database_name).  Run by the pgtap lane only where pg_cron is
-- preloaded; elsewhere the lane says it skipped this file.
BEGIN;
SELECT plan(8);

SELECT is(kizunasync.schedule_jobs() -> 'pg_cron', 'true'::jsonb, 'schedule_jobs sees pg_cron');
SELECT is((SELECT count(*)::int FROM cron.job WHERE jobname LIKE 'kizunasync-%'), 3, 'three jobs scheduled');
SELECT is(
  (SELECT string_agg(jobname::text || ' | ' || schedule::text || ' | ' || command, E'\n' ORDER BY jobname::text COLLATE "C")
     FROM cron.job WHERE jobname LIKE 'kizunasync-%'),
  E'kizunasync-compact-changelog | 47 3 * * * | SELECT kizunasync.compact_changelog()\n'
  'kizunasync-prune-clients | 31 3 * * * | SELECT kizunasync.prune_clients()\n'
  'kizunasync-reap-tombstones | 16 3 * * * | SELECT kizunasync.reap_tombstones()',
  'jobs run the retention functions at the settings'' schedules');

-- re-running replaces the jobs instead of adding more
SELECT lives_ok($$SELECT kizunasync.schedule_jobs()$$, 'schedule_jobs can run again');
SELECT is((SELECT count(*)::int FROM cron.job WHERE jobname LIKE 'kizunasync-%'), 3, 'still three jobs');

-- a changed schedule in the settings is applied by the next call
SELECT kizunasync.configure(reap_schedule => '*/10 * * * *') IS NOT NULL AS configured;
SELECT is(kizunasync.schedule_jobs() -> 'jobs' ->> 'kizunasync-reap-tombstones', '*/10 * * * *', 'reported schedule follows the settings');
SELECT is((SELECT schedule::text FROM cron.job WHERE jobname = 'kizunasync-reap-tombstones'), '*/10 * * * *', 'cron.job follows the settings');

-- the scheduled commands run as they are
SELECT lives_ok($t$DO $d$ DECLARE c text; BEGIN
    FOR c IN SELECT command FROM cron.job WHERE jobname LIKE 'kizunasync-%' LOOP EXECUTE c; END LOOP;
  END $d$$t$, 'every scheduled command runs');

SELECT * FROM finish();
ROLLBACK;
