-- J. prune_clients never reads auth.users, and keeps every bucket grant.
-- db: kz_roles_j_auth
-- owner: kz_r_j_auth_dbo
-- plan: 8
--
-- Until issue 23, prune_clients() removed the bucket grants of users
-- missing from auth.users, reading it as its owner.  A third-party auth
-- sub (or a uuid sub of a third-party provider) is never there, so each
-- run removed a live user's grants and its devices kept deleted rows
-- without a signal.  Now it removes no grant and does not read auth.users
-- at all (decisions/0003).  On Supabase schema auth belongs to a superuser
-- but auth.users belongs to supabase_auth_admin, which is not one.
-- kz_r_j_authadm plays that role here: it owns auth.users (USAGE on schema
-- auth, no CREATE), gives its id column a composite type of its own with a
-- cast to text that records the role it runs as and tries ALTER ROLE ...
-- SUPERUSER.  The database owner (not a superuser) and a member of
-- service_role run prune_clients() in their own sessions: the cast never
-- runs, and every grant stays, of the user auth.users has and of the two
-- it does not.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SELECT kzlog.scope('j_auth') \g /dev/null
CREATE ROLE kz_r_j_authadm LOGIN NOSUPERUSER;
CREATE ROLE kz_r_j_svc LOGIN NOSUPERUSER;
GRANT service_role TO kz_r_j_svc;
CREATE SCHEMA j_authadm AUTHORIZATION kz_r_j_authadm;
GRANT USAGE ON SCHEMA auth TO kz_r_j_authadm;
ALTER TABLE auth.users OWNER TO kz_r_j_authadm;
INSERT INTO auth.users (id) VALUES ('00000000-0000-4000-8000-0000000000a1');
INSERT INTO kizunasync.bucket_grants (user_id, table_name, bucket_value) VALUES
	('00000000-0000-4000-8000-0000000000a1', 'j_t', 'b1'),
	('00000000-0000-4000-8000-0000000000a2', 'j_t', 'b1'),
	('00000000-0000-4000-8000-0000000000a2', 'j_t', 'b2'),
	('00000000-0000-4000-8000-0000000000a3', 'j_t', 'b1');
RESET client_min_messages;

\connect - kz_r_j_authadm
CREATE TYPE j_authadm.uid AS (v uuid);
CREATE FUNCTION j_authadm.uid_text(x j_authadm.uid) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM kzlog.observe('j_auth', 'auth.users id cast to text');
	BEGIN
		EXECUTE 'ALTER ROLE kz_r_j_authadm SUPERUSER';
	EXCEPTION WHEN OTHERS THEN
		NULL;
	END;
	RETURN (x).v::text;
END $$;
CREATE CAST (j_authadm.uid AS text) WITH FUNCTION j_authadm.uid_text(j_authadm.uid);
ALTER TABLE auth.users ALTER COLUMN id TYPE j_authadm.uid USING row(id)::j_authadm.uid;

\connect - kz_r_j_auth_dbo
\set ON_ERROR_STOP 0
SELECT kizunasync.prune_clients(1) AS n \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'J auth.users: prune_clients(1) by the database owner', :'LAST_ERROR_MESSAGE');
\connect - postgres
SELECT kzt.is((SELECT count(*) FROM kizunasync.bucket_grants), 4::bigint,
	'J auth.users: prune_clients(1) removed no grant');

\connect - kz_r_j_svc
SET request.jwt.claims = '{"role": "service_role"}';
SELECT kizunasync.prune_clients() AS n \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'J auth.users: prune_clients() by a member of service_role', :'LAST_ERROR_MESSAGE');

\connect - postgres
\set ON_ERROR_STOP 1
SELECT kzlog.clean('j_auth', 'J auth.users: the auth.users owner''s cast never ran as a superuser or the extension owner');
SELECT kzt.ok(NOT rolsuper, 'J auth.users: the owner of auth.users is not a superuser afterwards')
  FROM pg_roles WHERE rolname = 'kz_r_j_authadm';
SELECT kzt.ok(NOT EXISTS (SELECT 1 FROM kzlog.seen WHERE scope = 'j_auth'),
	'J auth.users: auth.users was not read at all (the cast never ran)', kzlog.seen_as('j_auth'));
SELECT kzt.is((SELECT string_agg(user_id || ':' || bucket_value, ' ' ORDER BY user_id, bucket_value)
				 FROM kizunasync.bucket_grants),
	'00000000-0000-4000-8000-0000000000a1:b1 00000000-0000-4000-8000-0000000000a2:b1 00000000-0000-4000-8000-0000000000a2:b2 00000000-0000-4000-8000-0000000000a3:b1',
	'J auth.users: every grant is kept, of the user auth.users has and of the two it does not (over two calls)');
SELECT kzt.ok(NOT has_table_privilege('kz_r_j_authadm', 'kizunasync.bucket_grants', 'SELECT'),
	'J auth.users: control: the auth.users owner has no access to the bookkeeping');
