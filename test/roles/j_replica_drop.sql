-- J. Dropping a synced table in replica mode still forgets its bookkeeping.
-- db: kz_roles_j_rep
-- owner: kz_r_j_rep_dbo
-- plan: 6
--
-- Event triggers follow session_replication_role like ordinary triggers: an
-- ENABLE (origin) event trigger does not fire in a session that set it to
-- replica, as a data load or a migration tool may (a superuser, or a role
-- granted SET on the parameter - Supabase lets its postgres role set it).
-- The non-superuser database owner drops its synced table in such a
-- session.  On b703a9e the sql_drop event trigger did not fire: the table's
-- registration and entries stayed behind for good (unsync_table cannot name
-- a dropped table) and its wire name could never be synced again.
-- decisions/0061: the extension's event trigger and its configuration
-- trigger are enabled ALWAYS.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
GRANT SET ON PARAMETER session_replication_role TO kz_r_j_rep_dbo;
RESET client_min_messages;

\connect - kz_r_j_rep_dbo
\set ON_ERROR_STOP 1
CREATE TABLE public.rep_t (id bigint PRIMARY KEY, v text);
ALTER TABLE public.rep_t ENABLE ROW LEVEL SECURITY;
INSERT INTO public.rep_t VALUES (1, 'a'), (2, 'b');
SELECT kizunasync.sync_table('public.rep_t') AS n \gset
\set ON_ERROR_STOP 0
SET session_replication_role = replica;
SELECT kzt.is(current_setting('session_replication_role'), 'replica',
	'J replica drop: control: the database owner''s session is in replica mode');
DROP TABLE public.rep_t;
SELECT kzt.expect(:'SQLSTATE', '00000', 'J replica drop: DROP TABLE of its synced table in replica mode', :'LAST_ERROR_MESSAGE');
RESET session_replication_role;
\connect - postgres
\set ON_ERROR_STOP 1
SELECT kzt.is((SELECT count(*) FROM kizunasync.synced_tables WHERE table_name = 'rep_t'), 0::bigint,
	'J replica drop: the dropped table left kizunasync.synced_tables');
SELECT kzt.is((SELECT count(*) FROM kizunasync.changelog WHERE table_name = 'rep_t'), 0::bigint,
	'J replica drop: and its changelog entries are gone');
\connect - kz_r_j_rep_dbo
\set ON_ERROR_STOP 0
CREATE TABLE public.rep_t (id bigint PRIMARY KEY, v text);
ALTER TABLE public.rep_t ENABLE ROW LEVEL SECURITY;
INSERT INTO public.rep_t VALUES (7, 'new');
SELECT kizunasync.sync_table('public.rep_t') AS n \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'J replica drop: a new table syncs under the same name', :'LAST_ERROR_MESSAGE');
SELECT kzt.is(:'n', '1', 'J replica drop: and its one row is recorded');
\connect - postgres
REVOKE SET ON PARAMETER session_replication_role FROM kz_r_j_rep_dbo;
