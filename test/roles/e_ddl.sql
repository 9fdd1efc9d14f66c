-- E. DDL works for everyone after CREATE EXTENSION.
-- db: kz_roles_e
-- plan: 13
--
-- The extension's sql_drop event trigger fires for every DROP in the
-- database.  Per decisions/0060 it must never stop an ordinary role from
-- dropping its own objects, and dropping a synced table still forgets its
-- bookkeeping.  Each role in its own session: a plain LOGIN role and a
-- member of authenticated create and drop a temp table; a non-superuser
-- table owner drops columns of, and drops, its own tables, synced and not.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE ROLE kz_r_e_plain LOGIN NOSUPERUSER;
CREATE ROLE kz_r_e_auth LOGIN NOSUPERUSER;
GRANT authenticated TO kz_r_e_auth;
CREATE ROLE kz_r_e_owner LOGIN NOSUPERUSER;
GRANT CREATE ON SCHEMA public TO kz_r_e_owner;
RESET client_min_messages;

\connect - kz_r_e_plain
\set ON_ERROR_STOP 0
CREATE TEMP TABLE t ();
SELECT kzt.expect(:'SQLSTATE', '00000', 'E plain role: CREATE TEMP TABLE', :'LAST_ERROR_MESSAGE');
DROP TABLE t;
SELECT kzt.expect(:'SQLSTATE', '00000', 'E plain role: DROP TABLE of its temp table', :'LAST_ERROR_MESSAGE');

\connect - kz_r_e_auth
CREATE TEMP TABLE t ();
SELECT kzt.expect(:'SQLSTATE', '00000', 'E member of authenticated: CREATE TEMP TABLE', :'LAST_ERROR_MESSAGE');
DROP TABLE t;
SELECT kzt.expect(:'SQLSTATE', '00000', 'E member of authenticated: DROP TABLE of its temp table', :'LAST_ERROR_MESSAGE');

\connect - kz_r_e_owner
\set ON_ERROR_STOP 1
CREATE TABLE public.e_synced (id bigint PRIMARY KEY, a text, b text);
CREATE TABLE public.e_kept (id bigint PRIMARY KEY, a text);
CREATE TABLE public.e_plain (id bigint PRIMARY KEY, a text, b text);
\connect - postgres
SELECT kizunasync.sync_table('public.e_synced') AS n \gset
SELECT kizunasync.sync_table('public.e_kept') AS n \gset
INSERT INTO public.e_synced VALUES (1, 'a', 'b'), (2, 'a', 'b');
INSERT INTO public.e_kept VALUES (1, 'a');
DELETE FROM public.e_synced WHERE id = 2;
SELECT kzt.ok((SELECT count(*) FROM kizunasync.changelog WHERE table_name = 'e_synced') > 0
		  AND (SELECT count(*) FROM kizunasync.tombstones WHERE table_name = 'e_synced') > 0,
	'E control: e_synced has changelog entries and a tombstone before the drop');

\connect - kz_r_e_owner
\set ON_ERROR_STOP 0
ALTER TABLE public.e_plain DROP COLUMN b;
SELECT kzt.expect(:'SQLSTATE', '00000', 'E table owner: ALTER TABLE ... DROP COLUMN of its unsynced table', :'LAST_ERROR_MESSAGE');
ALTER TABLE public.e_synced DROP COLUMN b;
SELECT kzt.expect(:'SQLSTATE', '00000', 'E table owner: ALTER TABLE ... DROP COLUMN of its synced table', :'LAST_ERROR_MESSAGE');
DROP TABLE public.e_plain;
SELECT kzt.expect(:'SQLSTATE', '00000', 'E table owner: DROP TABLE of its unsynced table', :'LAST_ERROR_MESSAGE');
DROP TABLE public.e_synced;
SELECT kzt.expect(:'SQLSTATE', '00000', 'E table owner: DROP TABLE of its synced table', :'LAST_ERROR_MESSAGE');

\connect - postgres
\set ON_ERROR_STOP 1
SELECT kzt.is((SELECT count(*) FROM kizunasync.synced_tables WHERE table_name = 'e_synced'), 0::bigint,
	'E: dropping the synced table removed it from kizunasync.synced_tables');
SELECT kzt.is((SELECT count(*) FROM kizunasync.changelog WHERE table_name = 'e_synced'), 0::bigint,
	'E: and its changelog entries');
SELECT kzt.is((SELECT count(*) FROM kizunasync.tombstones WHERE table_name = 'e_synced'), 0::bigint,
	'E: and its tombstones');
SELECT kzt.ok(EXISTS (SELECT 1 FROM kizunasync.synced_tables WHERE table_name = 'e_kept')
		  AND EXISTS (SELECT 1 FROM kizunasync.changelog WHERE table_name = 'e_kept'),
	'E: another synced table keeps its registration and changelog');
