-- M. Bucket labels (issue 32 part 1, decisions/0013), as ordinary roles.
-- db: kz_roles_m
-- plan: 15
--
-- kz_r_m_owner (LOGIN, not a superuser) owns two tables bucketed by
-- domains whose CHECK records who runs it: one over numeric, one over
-- jsonb.  An ordinary writer moves a row from 1 to 1.0 (the same number)
-- and changes it; a member of authenticated (its own session, Data API
-- shape) must receive the change and later the delete, and a jsonb string
-- "1" must stay out of the number 1's bucket.  Computing a label never
-- runs the domain's CHECK or a type's I/O: seeding by sync_table and
-- repair_table (the superuser calls them; repair gives back the bucket
-- value of a vanished row from its label alone) run no CHECK as a
-- superuser or the extension owner; the CHECK runs where a value is
-- written (as the writer) and where a pull casts a param (as the caller).
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SELECT kzlog.scope(s) FROM unnest('{none,m_seed,m_write,m_pull,m_repair}'::text[]) s \g /dev/null
CREATE ROLE kz_r_m_owner LOGIN NOSUPERUSER;
CREATE ROLE kz_r_m_writer LOGIN NOSUPERUSER;
CREATE ROLE kz_r_m_api LOGIN NOSUPERUSER;
GRANT authenticated TO kz_r_m_api;
GRANT CREATE ON SCHEMA public TO kz_r_m_owner;
RESET client_min_messages;

\connect - kz_r_m_owner
SET client_min_messages = warning;
CREATE DOMAIN public.m_amount AS numeric
	CHECK (kzlog.observe(coalesce(current_setting('kzt.phase', true), 'none'), 'numeric domain check'));
CREATE DOMAIN public.m_doc AS jsonb
	CHECK (kzlog.observe(coalesce(current_setting('kzt.phase', true), 'none'), 'jsonb domain check'));
CREATE TABLE public.m_n (id int PRIMARY KEY, grp public.m_amount, v text);
CREATE TABLE public.m_j (id int PRIMARY KEY, g public.m_doc);
ALTER TABLE public.m_n ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.m_j ENABLE ROW LEVEL SECURITY;
CREATE POLICY everyone ON public.m_n USING (true) WITH CHECK (true);
CREATE POLICY everyone ON public.m_j USING (true) WITH CHECK (true);
GRANT SELECT ON public.m_n, public.m_j TO authenticated;
GRANT SELECT, INSERT, UPDATE, DELETE ON public.m_n, public.m_j TO kz_r_m_writer;
INSERT INTO public.m_n VALUES (1, 1, 'a');
INSERT INTO public.m_j VALUES (1, '1'), (2, '"1"'), (3, '1.0');
RESET client_min_messages;

-- ------------------------------------------------ seeding, by the superuser
\connect - postgres
SET kzt.phase = 'm_seed';
\set ON_ERROR_STOP 0
SELECT kizunasync.sync_table('public.m_n', bucket_column => 'grp') AS n \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'M seed: sync_table of m_n (bucketed by a numeric domain)', :'LAST_ERROR_MESSAGE');
SELECT kizunasync.sync_table('public.m_j', bucket_column => 'g') AS n \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'M seed: sync_table of m_j (bucketed by a jsonb domain)', :'LAST_ERROR_MESSAGE');
SELECT kzlog.clean('m_seed', 'M seed: computing the seeded labels ran no domain check as a superuser or the extension owner');

-- -------------------------------------- the device bootstraps, in its session
\connect - kz_r_m_api
SET kzt.phase = 'm_pull';
\set bn '[{"table": "m_n", "params": {"grp": 1}}]'
\set bj '[{"table": "m_j", "params": {"g": 1}}]'
BEGIN;
SET LOCAL ROLE authenticated;
SELECT set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-0000000000d1", "role": "authenticated"}', true) IS NOT NULL AS claims \gset
SELECT kizunasync.pull(:'bn', '0', 1) AS p \gset
COMMIT;
SELECT :'p'::jsonb ->> 'cursor' AS cn \gset
SELECT kzt.is((SELECT jsonb_agg(r -> 'row' ->> 'v') FROM jsonb_array_elements(:'p'::jsonb -> 'rows') r),
	'["a"]'::jsonb, 'M pull: the device of {"grp": 1} bootstraps with row 1');
BEGIN;
SET LOCAL ROLE authenticated;
SELECT set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-0000000000d1", "role": "authenticated"}', true) IS NOT NULL AS claims \gset
SELECT kizunasync.pull(:'bj', '0', 1) AS p \gset
COMMIT;
SELECT kzt.is((SELECT jsonb_agg(r ->> 'pk' ORDER BY r ->> 'pk') FROM jsonb_array_elements(:'p'::jsonb -> 'rows') r),
	'["1", "3"]'::jsonb, 'M pull: the device of {"g": 1} receives the numbers 1 and 1.0, not the string "1"');
SELECT kzt.ok(EXISTS (SELECT 1 FROM kzlog.seen WHERE scope = 'm_pull' AND cu = 'authenticated'),
	'M control: casting the params ran the domain checks as the caller', kzlog.seen_as('m_pull'));

-- -------------------------------------------------- writes, ordinary role
\connect - kz_r_m_writer
SET kzt.phase = 'm_write';
UPDATE public.m_n SET grp = 1.0 WHERE id = 1;
SELECT kzt.expect_rows(:'SQLSTATE', :ROW_COUNT, '00000', 'M write: grp 1 -> 1.0 (the same number)', :'LAST_ERROR_MESSAGE');
UPDATE public.m_n SET v = 'b' WHERE id = 1;
SELECT kzt.expect_rows(:'SQLSTATE', :ROW_COUNT, '00000', 'M write: v a -> b', :'LAST_ERROR_MESSAGE');
SELECT kzt.ok(EXISTS (SELECT 1 FROM kzlog.seen WHERE scope = 'm_write' AND cu = 'kz_r_m_writer'),
	'M control: the domain check ran as the writer', kzlog.seen_as('m_write'));
SELECT kzlog.clean('m_write', 'M write: no domain check ran as a superuser or the extension owner');

\connect - kz_r_m_api
SET kzt.phase = 'm_pull';
BEGIN;
SET LOCAL ROLE authenticated;
SELECT set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-0000000000d1", "role": "authenticated"}', true) IS NOT NULL AS claims \gset
SELECT kizunasync.pull(:'bn', :'cn', 1) AS p \gset
COMMIT;
SELECT :'p'::jsonb ->> 'cursor' AS cn \gset
SELECT kzt.is((SELECT jsonb_agg(r -> 'row') FROM jsonb_array_elements(:'p'::jsonb -> 'rows') r),
	'[{"id": 1, "grp": 1.0, "v": "b"}]'::jsonb, 'M pull: the device receives v = b after grp 1 -> 1.0');

-- -------------------------------- a delete repair_table records, by label
\connect - kz_r_m_owner
ALTER TABLE public.m_n DISABLE TRIGGER kizunasync_capture;
DELETE FROM public.m_n WHERE id = 1;
\connect - postgres
SET kzt.phase = 'm_repair';
SET client_min_messages = error;
SELECT kizunasync.repair_table('public.m_n') AS n \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'M repair: repair_table of m_n records the vanished row', :'LAST_ERROR_MESSAGE');
RESET client_min_messages;
SELECT kzlog.clean('m_repair', 'M repair: giving back the vanished row''s bucket value ran no domain check as a superuser or the extension owner');

\connect - kz_r_m_api
SET kzt.phase = 'm_pull';
BEGIN;
SET LOCAL ROLE authenticated;
SELECT set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-0000000000d1", "role": "authenticated"}', true) IS NOT NULL AS claims \gset
SELECT kizunasync.pull(:'bn', :'cn', 1) AS p \gset
COMMIT;
SELECT kzt.is((SELECT jsonb_agg(r ->> 'pk') FROM jsonb_array_elements(:'p'::jsonb -> 'tombstones') r),
	'["1"]'::jsonb, 'M pull: the device receives the tombstone of row 1');
SELECT kzlog.clean('m_pull', 'M pull: no domain check ran as a superuser or the extension owner');
\connect - postgres
SELECT kzt.diag(format('M %s: %s', s, kzlog.seen_as(s))) FROM unnest('{m_seed,m_write,m_pull,m_repair}'::text[]) s;
