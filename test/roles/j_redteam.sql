-- J. Attacks that fail safely (issue 10's second review), kept so they stay covered.
-- db: kz_roles_j_red
-- owner: kz_r_j_red_dbo
-- plan: 24
--
-- Each as an ordinary LOGIN role in its own session:
--   R1 an error inside a privileged section, caught by the caller: the
--      caller is back (user, search_path, no restricted operation, no
--      bookkeeping access);
--   R2 statement_timeout cancels pulls and pushes at many points (inside
--      privileged sections, inside push's subtransactions), each cancel
--      caught by the caller: every time the caller's identity and settings
--      are back;
--   R3 an application's SECURITY DEFINER wrapper around pull acts as its
--      owner, while bookkeeping (grants) is attributed to the session's JWT
--      sub (decisions/0060: as any SQL would);
--   R4 kizunasync.* settings set as placeholders before the library loads
--      do not survive for an ordinary role;
--   R5 request.jwt.claims tricks: not an object, a nested sub, invalid
--      JSON, deep nesting, odd characters in sub, an oversized sub;
--   R6 a synced table renamed and moved to another schema by its owner
--      keeps syncing under its wire name;
--   R7 a synced table attached as a partition: writes through the parent
--      and rows moved out are captured.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE ROLE kz_r_j_red_api LOGIN NOSUPERUSER;
CREATE ROLE kz_r_j_red_owner LOGIN NOSUPERUSER;
CREATE ROLE kz_r_j_red_plain LOGIN NOSUPERUSER;
GRANT authenticated TO kz_r_j_red_api, kz_r_j_red_owner;
GRANT CREATE ON DATABASE kz_roles_j_red TO kz_r_j_red_owner;
RESET client_min_messages;

-- ---------------------------------------------------------------- R1
\connect - kz_r_j_red_dbo
\set ON_ERROR_STOP 1
CREATE TEMP TABLE r1 (cu name, sp text, bk text, sro text, caught text);
DO $$
DECLARE
	st text;
	bk text := 'readable';
	sro text := 'no';
BEGIN
	BEGIN
		PERFORM kizunasync.configure(max_pull_limit => 0);
		st := '00000';
	EXCEPTION WHEN OTHERS THEN
		GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE;
	END;
	BEGIN
		PERFORM 1 FROM kizunasync.settings;
	EXCEPTION WHEN insufficient_privilege THEN
		bk := 'denied';
	END;
	BEGIN
		CREATE TEMP TABLE r1_probe ();
	EXCEPTION WHEN OTHERS THEN
		sro := 'yes: ' || SQLERRM;
	END;
	INSERT INTO r1 VALUES (current_user, current_setting('search_path'), bk, sro, st);
END $$;
SELECT kzt.is(caught, '23514', 'R1: configure(max_pull_limit => 0) fails in its privileged UPDATE (23514), caught by the caller') FROM r1;
SELECT kzt.is(cu, 'kz_r_j_red_dbo'::name, 'R1: in the handler the current user is the caller again') FROM r1;
SELECT kzt.is(sp, '"$user", public', 'R1: and the search_path is the caller''s') FROM r1;
SELECT kzt.is(bk, 'denied', 'R1: and the bookkeeping is out of reach') FROM r1;
SELECT kzt.is(sro, 'no', 'R1: and no security-restricted operation is left in force') FROM r1;

-- ---------------------------------------------------------------- R2
\connect - kz_r_j_red_dbo
\set ON_ERROR_STOP 1
CREATE TABLE public.red_many (id bigint PRIMARY KEY, owner_id uuid NOT NULL, v text);
ALTER TABLE public.red_many ENABLE ROW LEVEL SECURITY;
CREATE POLICY all_auth ON public.red_many TO authenticated USING (true) WITH CHECK (true);
GRANT SELECT, INSERT, UPDATE, DELETE ON public.red_many TO authenticated;
INSERT INTO public.red_many SELECT g, '00000000-0000-4000-8000-0000000000b1', repeat('x', 200) FROM generate_series(1, 3000) g;
SELECT kizunasync.sync_table('public.red_many', bucket_column => 'owner_id') AS n \gset
\connect - kz_r_j_red_api
\set ON_ERROR_STOP 0
SET request.jwt.claims = '{"sub": "00000000-0000-4000-8000-0000000000b1", "role": "authenticated"}';
SET TimeZone = 'Asia/Tokyo';
SET search_path = public, pg_temp;
CREATE TEMP TABLE r2 (what text, cu name, sp text, tz text, bk text, sro text);
SELECT format('SET statement_timeout = %s', ms),
	format($do$DO $b$
DECLARE
	bk text := 'readable';
	sro text := 'no';
BEGIN
	BEGIN
		%s;
		INSERT INTO pg_temp.r2 (what) VALUES ('completed');
		RETURN;
	EXCEPTION WHEN query_canceled THEN
		NULL;
	END;
	BEGIN
		PERFORM 1 FROM kizunasync.changelog LIMIT 1;
	EXCEPTION WHEN insufficient_privilege THEN
		bk := 'denied';
	END;
	BEGIN
		CREATE TEMP TABLE IF NOT EXISTS r2_probe ();
	EXCEPTION WHEN OTHERS THEN
		sro := 'yes';
	END;
	INSERT INTO pg_temp.r2 VALUES (%L, current_user, current_setting('search_path'), current_setting('TimeZone'), bk, sro);
END $b$$do$, call, what),
	'RESET statement_timeout'
  FROM (SELECT ms, 'pull' AS what,
			   $c$PERFORM kizunasync.pull('[{"table": "red_many", "params": {"owner_id": "00000000-0000-4000-8000-0000000000b1"}}]', '0', 1, 2000)$c$ AS call
		  FROM generate_series(1, 40) ms
		UNION ALL
		SELECT ms, 'push',
			   format('PERFORM kizunasync.push(%L, NULL, 1)',
					  (SELECT jsonb_build_object('mutations', jsonb_agg(jsonb_build_object(
							'mutation_id', gen_random_uuid(), 'table', 'red_many', 'pk', g::text, 'op', 'update',
							'columns', jsonb_build_object('v', 'cancel ' || ms)) ORDER BY g))
						 FROM generate_series(1, 300) g))
		  FROM generate_series(1, 80, 2) ms) s
 ORDER BY what, ms \gexec
\set ON_ERROR_STOP 1
SELECT kzt.diag(format('R2: %s pulls and pushes cancelled and caught, %s completed',
	count(*) FILTER (WHERE what <> 'completed'), count(*) FILTER (WHERE what = 'completed'))) FROM r2;
SELECT kzt.ok(count(*) FILTER (WHERE what = 'pull') > 0 AND count(*) FILTER (WHERE what = 'push') > 0,
	'R2: some pulls and some pushes were cancelled by statement_timeout and caught') FROM r2;
SELECT kzt.is(string_agg(DISTINCT format('%s/%s/%s/%s', cu, sp, tz, bk), ', '),
	'kz_r_j_red_api/public, pg_temp/Asia/Tokyo/denied',
	'R2: after every caught cancel: the caller, its search_path, its TimeZone, no bookkeeping access')
  FROM r2 WHERE what <> 'completed';
SELECT kzt.is(string_agg(DISTINCT sro, ', '), 'no', 'R2: after every caught cancel: no security-restricted operation in force')
  FROM r2 WHERE what <> 'completed';

-- ---------------------------------------------------------------- R3
\connect - kz_r_j_red_owner
\set ON_ERROR_STOP 1
CREATE SCHEMA red_app;
GRANT USAGE ON SCHEMA red_app TO authenticated, kz_r_j_red_dbo;
CREATE TABLE red_app.notes (id bigint PRIMARY KEY, owner_id uuid NOT NULL, v text);
ALTER TABLE red_app.notes ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON red_app.notes TO authenticated USING (owner_id = auth.uid()) WITH CHECK (owner_id = auth.uid());
GRANT SELECT, INSERT, UPDATE, DELETE ON red_app.notes TO authenticated;
INSERT INTO red_app.notes VALUES (1, '00000000-0000-4000-8000-0000000000c1', 'mine'),
	(2, '00000000-0000-4000-8000-0000000000c2', 'someone else''s');
CREATE FUNCTION red_app.pull_as_owner(b jsonb) RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	RETURN kizunasync.pull(b, '0', 1);
END $$;
REVOKE EXECUTE ON FUNCTION red_app.pull_as_owner(jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION red_app.pull_as_owner(jsonb) TO authenticated;
\connect - postgres
ALTER TABLE red_app.notes OWNER TO kz_r_j_red_dbo;
\connect - kz_r_j_red_dbo
SELECT kizunasync.sync_table('red_app.notes', bucket_column => 'owner_id') AS n \gset
\connect - postgres
ALTER TABLE red_app.notes OWNER TO kz_r_j_red_owner;
\connect - kz_r_j_red_api
\set ON_ERROR_STOP 1
SET request.jwt.claims = '{"sub": "00000000-0000-4000-8000-0000000000c1", "role": "authenticated"}';
SELECT kzt.is((SELECT string_agg(r ->> 'pk', ',' ORDER BY r ->> 'pk')
				 FROM jsonb_array_elements(kizunasync.pull('[{"table": "notes", "params": {"owner_id": "00000000-0000-4000-8000-0000000000c2"}}]', '0', 1) -> 'rows') r),
	NULL, 'R3: a direct pull of another user''s bucket delivers nothing (RLS as the caller)');
SELECT kzt.is((SELECT string_agg(r ->> 'pk', ',' ORDER BY r ->> 'pk')
				 FROM jsonb_array_elements(red_app.pull_as_owner('[{"table": "notes", "params": {"owner_id": "00000000-0000-4000-8000-0000000000c2"}}]') -> 'rows') r),
	'2', 'R3: through the table owner''s SECURITY DEFINER wrapper it delivers what the owner may read');
\connect - postgres
SELECT kzt.is((SELECT string_agg(user_id || ' ' || bucket_value, ',') FROM kizunasync.bucket_grants WHERE table_name = 'notes'),
	'00000000-0000-4000-8000-0000000000c1 00000000-0000-4000-8000-0000000000c2',
	'R3: the grant is recorded for the session''s JWT sub (bookkeeping follows the JWT, reads follow current_user)');

-- ---------------------------------------------------------------- R5
\connect - kz_r_j_red_api
\set ON_ERROR_STOP 0
SET request.jwt.claims = '[1, 2]';
SELECT kizunasync.pull('[{"table": "red_many", "params": {"owner_id": "00000000-0000-4000-8000-0000000000b1"}}]', '0', 1, 1) AS r \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'R5: claims that are not an object: a pull without a user', :'LAST_ERROR_MESSAGE');
SET request.jwt.claims = '{"sub": {"nested": "00000000-0000-4000-8000-0000000000b1"}}';
SELECT kizunasync.pull('[{"table": "red_many", "params": {"owner_id": "00000000-0000-4000-8000-0000000000b1"}}]', '0', 1, 1) AS r \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'R5: a sub that is not a string counts as no sub', :'LAST_ERROR_MESSAGE');
SET request.jwt.claims = '{"sub": ';
SELECT kizunasync.pull('[]', '0', 1) AS r \gset
SELECT kzt.expect(:'SQLSTATE', '22P02', 'R5: claims that are not JSON: 22P02', :'LAST_ERROR_MESSAGE');
SELECT set_config('request.jwt.claims', repeat('[', 100000) || repeat(']', 100000), false) IS NOT NULL AS s \gset
SELECT kizunasync.pull('[]', '0', 1) AS r \gset
SELECT kzt.ok(:'SQLSTATE' IN ('54001', '22P02'), 'R5: claims nested 100,000 deep: a clean error, not a crash', :'SQLSTATE' || ' ' || :'LAST_ERROR_MESSAGE');
SET request.jwt.claims = '{"sub": "o''dd \"sub\"\n\\ ☃", "role": "authenticated"}';
SELECT kizunasync.pull('[{"table": "red_many", "params": {"owner_id": "00000000-0000-4000-8000-0000000000b1"}}]', '0', 1, 1) AS r \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'R5: a sub with quotes, a newline, a backslash and a snowman', :'LAST_ERROR_MESSAGE');
SELECT set_config('request.jwt.claims', json_build_object('sub', repeat('é', 128))::text, false) IS NOT NULL AS s \gset
SELECT kizunasync.pull('[]', '0', 1) AS r \gset
SELECT kzt.expect(:'SQLSTATE', '28000', 'R5: a sub of 256 bytes is refused (28000)', :'LAST_ERROR_MESSAGE');
\connect - postgres
\set ON_ERROR_STOP 1
SELECT kzt.is((SELECT format('%s odd, %s other', count(*) FILTER (WHERE user_id = E'o''dd "sub"\n\\ ☃'),
					count(*) FILTER (WHERE user_id NOT IN (E'o''dd "sub"\n\\ ☃', '00000000-0000-4000-8000-0000000000b1')))
				 FROM kizunasync.bucket_grants WHERE table_name = 'red_many'),
	'1 odd, 0 other',
	'R5: the odd sub is recorded byte for byte as the grant''s user; the subless pulls recorded none');

-- ---------------------------------------------------------------- R6
\connect - kz_r_j_red_dbo
\set ON_ERROR_STOP 1
CREATE SCHEMA red_moved;
GRANT USAGE ON SCHEMA red_moved TO authenticated;
CREATE TABLE public.red_ren (id bigint PRIMARY KEY, v text);
ALTER TABLE public.red_ren ENABLE ROW LEVEL SECURITY;
CREATE POLICY all_auth ON public.red_ren TO authenticated USING (true) WITH CHECK (true);
GRANT SELECT, INSERT, UPDATE, DELETE ON public.red_ren TO authenticated;
INSERT INTO public.red_ren VALUES (1, 'before');
SELECT kizunasync.sync_table('public.red_ren') AS n \gset
ALTER TABLE public.red_ren RENAME TO red_renamed;
ALTER TABLE public.red_renamed SET SCHEMA red_moved;
\connect - kz_r_j_red_api
\set ON_ERROR_STOP 0
SET request.jwt.claims = '{"sub": "00000000-0000-4000-8000-0000000000c1", "role": "authenticated"}';
SELECT kizunasync.push('{"mutations": [{"mutation_id": "00000000-0000-4000-8000-0000000000e6", "table": "red_ren", "pk": "2", "op": "insert", "columns": {"v": "after the move"}}]}',
	NULL, 1) -> 'verdicts' -> 0 ->> 'verdict' AS v \gset
SELECT kzt.is(:'v', 'applied', 'R6: a push under the wire name reaches the renamed, moved table');
SELECT kzt.is((SELECT string_agg(r -> 'row' ->> 'v', ',' ORDER BY r ->> 'pk')
				 FROM jsonb_array_elements(kizunasync.pull('[{"table": "red_ren"}]', '0', 1) -> 'rows') r),
	'before,after the move', 'R6: a pull under the wire name reads it');

-- ---------------------------------------------------------------- R7
\connect - kz_r_j_red_dbo
\set ON_ERROR_STOP 1
CREATE TABLE public.red_parts (id bigint, k int, v text, PRIMARY KEY (id, k)) PARTITION BY LIST (k);
CREATE TABLE public.red_part_other PARTITION OF public.red_parts FOR VALUES IN (2);
CREATE TABLE public.red_part (id bigint, k int, v text, PRIMARY KEY (id, k));
SELECT kizunasync.sync_table('public.red_part', key_columns => '{id,k}') AS n \gset
ALTER TABLE public.red_parts ATTACH PARTITION public.red_part FOR VALUES IN (1);
GRANT SELECT, INSERT, UPDATE, DELETE ON public.red_parts, public.red_part TO kz_r_j_red_plain;
\connect - kz_r_j_red_plain
\set ON_ERROR_STOP 0
INSERT INTO public.red_parts VALUES (1, 1, 'through the parent');
UPDATE public.red_parts SET k = 2 WHERE id = 1;
SELECT kzt.expect(:'SQLSTATE', '00000', 'R7: an ordinary writer moves the row out of the synced partition', :'LAST_ERROR_MESSAGE');
\connect - postgres
SELECT kzt.is((SELECT string_agg(pk, ',') FROM kizunasync.tombstones WHERE table_name = 'red_part'), '["1", "1"]',
	'R7: the row inserted through the parent and moved out left a tombstone in the synced partition');

-- ---------------------------------------------------------------- R4
\connect - kz_r_j_red_plain
\set ON_ERROR_STOP 0
SET kizunasync.notify_fallback = on;
SET kizunasync.log_rejections = on;
SELECT kzt.is(current_setting('kizunasync.notify_fallback'), 'on', 'R4: control: the placeholder holds before the library loads');
-- the capture trigger loads the library
INSERT INTO public.red_parts VALUES (5, 1, 'loads the library');
SELECT kzt.is(current_setting('kizunasync.notify_fallback') || ' ' || current_setting('kizunasync.log_rejections'), 'off off',
	'R4: once the library defines them, an ordinary role''s placeholders for SUSET settings are dropped');
