-- C. Entry points refuse to run inside a security-restricted operation.
-- db: kz_roles_c
-- plan: 8
--
-- A materialized view owned by an ordinary role calls kizunasync.pull for
-- another user's bucket; an expression index owned by an ordinary role calls
-- kizunasync.push writing a row its owner is denied.  A superuser (whose
-- session carries some user's JWT claims, as a maintenance session may)
-- runs REFRESH MATERIALIZED VIEW / ANALYZE: PostgreSQL runs the view query
-- and the index expression as the object's owner under
-- SECURITY_RESTRICTED_OPERATION, and 0.1.0's entry points took the outer
-- user (the superuser) as the caller.  Per decisions/0060 both calls are
-- refused with 42501 "... cannot run inside a security-restricted
-- operation", and nothing leaks or is written.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
\set victim '00000000-0000-4000-8000-0000000000c9'
\set maint '00000000-0000-4000-8000-0000000000cc'
CREATE TABLE public.c_notes (id bigint PRIMARY KEY, owner_id uuid NOT NULL, body text);
ALTER TABLE public.c_notes ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON public.c_notes TO authenticated USING (owner_id = auth.uid()) WITH CHECK (owner_id = auth.uid());
GRANT SELECT, INSERT, UPDATE, DELETE ON public.c_notes TO authenticated;
SELECT kizunasync.sync_table('public.c_notes', bucket_column => 'owner_id') AS n \gset
INSERT INTO public.c_notes VALUES (1, :'victim', 'secret of the victim');
CREATE ROLE kz_r_c_mv LOGIN NOSUPERUSER;
CREATE ROLE kz_r_c_idx LOGIN NOSUPERUSER;
GRANT authenticated TO kz_r_c_mv, kz_r_c_idx;
CREATE SCHEMA c_mv AUTHORIZATION kz_r_c_mv;
CREATE SCHEMA c_idx AUTHORIZATION kz_r_c_idx;
RESET client_min_messages;

-- the matview owner's own session: a pull of the victim's bucket, not run yet
\connect - kz_r_c_mv
CREATE MATERIALIZED VIEW c_mv.leak AS
	SELECT kizunasync.pull('[{"table": "c_notes", "params": {"owner_id": "00000000-0000-4000-8000-0000000000c9"}}]', '0', 1) AS r
	WITH NO DATA;

-- the index owner's own session: an IMMUTABLE-declared function that pushes
-- a row into the victim's bucket when somebody else evaluates it
\connect - kz_r_c_idx
CREATE FUNCTION c_idx.sneaky(x integer) RETURNS integer LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	IF session_user <> 'kz_r_c_idx' THEN
		PERFORM set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-0000000000c1", "role": "authenticated"}', true);
		PERFORM kizunasync.push(jsonb_build_object('mutations', jsonb_build_array(jsonb_build_object(
			'mutation_id', gen_random_uuid(), 'table', 'c_notes', 'pk', (100 + x)::text, 'op', 'insert',
			'columns', jsonb_build_object('owner_id', '00000000-0000-4000-8000-0000000000c9', 'body', 'planted by an index')))),
			NULL, 1);
	END IF;
	RETURN x;
END $$;
CREATE TABLE c_idx.t (x integer);
CREATE INDEX t_sneaky ON c_idx.t (c_idx.sneaky(x));
INSERT INTO c_idx.t SELECT generate_series(1, 5);

-- the superuser's maintenance session
\connect - postgres
SET request.jwt.claims = '{"sub": "00000000-0000-4000-8000-0000000000cc", "role": "authenticated"}';
\set ON_ERROR_STOP 0
REFRESH MATERIALIZED VIEW c_mv.leak;
\set st :SQLSTATE
\set msg :LAST_ERROR_MESSAGE
SELECT kzt.expect(:'st', '42501', 'C matview: REFRESH of a matview whose query calls pull is refused (42501)', :'msg');
SELECT kzt.ok(:'st' = '42501' AND :'msg' LIKE '%security-restricted operation%',
	'C matview: the refusal says "security-restricted operation"', format('SQLSTATE %s: %s', :'st', :'msg'));
\set ON_ERROR_STOP 1
SELECT relispopulated AS populated FROM pg_class WHERE oid = 'c_mv.leak'::regclass \gset c_
\if :c_populated
SELECT kzt.ok(NOT EXISTS (SELECT 1 FROM c_mv.leak WHERE r::text LIKE '%secret of the victim%'),
	'C matview: nothing of the victim''s bucket leaked into the matview', (SELECT r::text FROM c_mv.leak LIMIT 1));
\else
SELECT kzt.ok(true, 'C matview: nothing of the victim''s bucket leaked into the matview (it is not populated)');
\endif
SELECT kzt.is((SELECT count(*) FROM kizunasync.bucket_grants WHERE bucket_value = :'victim'), 0::bigint,
	'C matview: no bucket grant on the victim''s bucket was recorded (for the maintenance session''s claims)');

\set ON_ERROR_STOP 0
ANALYZE c_idx.t;
\set st :SQLSTATE
\set msg :LAST_ERROR_MESSAGE
SELECT kzt.expect(:'st', '42501', 'C index: ANALYZE evaluating an index expression that calls push is refused (42501)', :'msg');
SELECT kzt.ok(:'st' = '42501' AND :'msg' LIKE '%security-restricted operation%',
	'C index: the refusal says "security-restricted operation"', format('SQLSTATE %s: %s', :'st', :'msg'));
\set ON_ERROR_STOP 1
SELECT kzt.is((SELECT count(*) FROM public.c_notes WHERE body = 'planted by an index'), 0::bigint,
	'C index: the row the index owner may not write was not written');
SELECT kzt.is((SELECT count(*) FROM kizunasync.verdicts
				WHERE user_id = '00000000-0000-4000-8000-0000000000c1' OR table_name = 'c_notes'), 0::bigint,
	'C index: no verdict was recorded for the refused pushes');
