-- kizunasync 0.2.0 -> 0.3.0 upgrade script.  Assembled by make from
-- sql/upgrade/0.2.0--0.3.0.pre.sql, the routine parts of sql/src/ (every
-- function, the status view, comments) and
-- sql/upgrade/0.2.0--0.3.0.post.sql; frozen when 0.3.0 is released
-- (decisions/0080).  test/t/upgrade.sh checks that an upgraded database has
-- exactly the objects of a fresh 0.3.0 install.
\echo Use "ALTER EXTENSION kizunasync UPDATE TO '0.3.0'" to load this file. \quit

-- The grants are made again at the end, in the order of a fresh install
-- (an ACL lists its grantees in the order they were granted).
REVOKE ALL ON ALL ROUTINES IN SCHEMA kizunasync FROM authenticated, service_role, pg_database_owner, pg_monitor;
