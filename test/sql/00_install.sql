-- Install into the regression database: stand-ins first, then the extension.
\set ECHO none
\set QUIET on
\i test/setup/standins.sql
\set QUIET off
\set ECHO all
CREATE EXTENSION kizunasync;
CREATE EXTENSION kizunasync_test;
-- a new install numbers from the clock (microseconds), so it never reuses
-- the seqs of an earlier incarnation; the tests number from 1
SELECT last_value > 1700000000000000 AS numbered_from_the_clock, is_called FROM kizunasync.change_seq;
SELECT setval('kizunasync.change_seq', 1, false);
SELECT extname, extversion, extrelocatable, n.nspname
  FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
 WHERE extname = 'kizunasync';
-- bookkeeping tables, and who may touch them (nobody but the owner and service_role)
SELECT c.relname, c.relkind,
       has_table_privilege('authenticated', c.oid, 'SELECT') AS auth_select,
       has_table_privilege('anon', c.oid, 'SELECT') AS anon_select
  FROM pg_class c
 WHERE c.relnamespace = 'kizunasync'::regnamespace AND c.relkind IN ('r', 'S')
 ORDER BY c.relname;
SELECT * FROM kizunasync.settings;
SELECT * FROM kizunasync.reap_state;
