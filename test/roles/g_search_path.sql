-- G. Policies resolve names with the caller's search_path.
-- db: kz_roles_g
-- plan: 16
--
-- Supabase style: the RLS policy of g_docs calls a plain SQL helper
-- (no SET search_path) that names its table unqualified ("memberships",
-- in public).  A direct SELECT by the user works; per decisions/0060 the
-- statements pull and push run as the caller see the caller's search_path
-- too, so they work as well: through the Data API shape (authenticator,
-- SET LOCAL ROLE authenticated, claims, PostgREST's search_path) and as an
-- ordinary LOGIN role, member of authenticated, in its own session with
-- its default search_path.  0.1.0 ran them with search_path = '' (42P01).
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE TABLE public.memberships (user_id uuid NOT NULL, team_id uuid NOT NULL, PRIMARY KEY (user_id, team_id));
GRANT SELECT ON public.memberships TO authenticated;
CREATE FUNCTION public.is_member(team uuid) RETURNS boolean LANGUAGE sql STABLE AS $$
	SELECT EXISTS (SELECT 1 FROM memberships m WHERE m.team_id = team AND m.user_id = auth.uid())
$$;
CREATE TABLE public.g_docs (id bigint PRIMARY KEY, team_id uuid NOT NULL, body text);
ALTER TABLE public.g_docs ENABLE ROW LEVEL SECURITY;
CREATE POLICY member ON public.g_docs TO authenticated USING (is_member(team_id)) WITH CHECK (is_member(team_id));
GRANT SELECT, INSERT, UPDATE, DELETE ON public.g_docs TO authenticated;
SELECT kizunasync.sync_table('public.g_docs', bucket_column => 'team_id') AS n \gset
INSERT INTO public.memberships VALUES
	('00000000-0000-4000-8000-0000000000e1', '00000000-0000-4000-8000-0000000000a7'),
	('00000000-0000-4000-8000-0000000000e2', '00000000-0000-4000-8000-0000000000a7');
INSERT INTO public.g_docs VALUES (1, '00000000-0000-4000-8000-0000000000a7', 'team doc'),
	(2, '00000000-0000-4000-8000-0000000000a8', 'other team''s doc');
CREATE ROLE kz_r_g_user LOGIN NOSUPERUSER;
GRANT authenticated TO kz_r_g_user;
RESET client_min_messages;

-- ------------------------------------------------------- the Data API shape
\connect - authenticator
\set ON_ERROR_STOP 0
\set pre 'BEGIN; SET LOCAL ROLE authenticated; SET LOCAL search_path = kizunasync, public; SELECT set_config(''request.jwt.claims'', ''{"sub": "00000000-0000-4000-8000-0000000000e1", "role": "authenticated"}'', true) IS NULL AS no \\gset'
:pre
\set n ''
SELECT count(*) AS n FROM public.g_docs \gset
\set st :SQLSTATE
\set msg :LAST_ERROR_MESSAGE
COMMIT;
SELECT kzt.expect(:'st', '00000', 'G Data API: a direct SELECT under the policy works', :'msg');
SELECT kzt.is(nullif(:'n', ''), '1', 'G Data API: it sees the team''s doc only');
:pre
\set r ''
SELECT kizunasync.pull('[{"table": "g_docs", "params": {"team_id": "00000000-0000-4000-8000-0000000000a7"}}]', '0', 1) AS r \gset
\set st :SQLSTATE
\set msg :LAST_ERROR_MESSAGE
COMMIT;
SELECT kzt.expect(:'st', '00000', 'G Data API: pull of the team''s bucket works', :'msg');
SELECT kzt.is((SELECT jsonb_agg(x -> 'row' ->> 'body') FROM jsonb_array_elements(nullif(:'r', '')::jsonb -> 'rows') x), '["team doc"]'::jsonb,
	'G Data API: pull delivers the team''s doc');
:pre
\set r ''
SELECT kizunasync.push('{"mutations": [{"mutation_id": "00000000-0000-4000-8000-00000000f401", "table": "g_docs", "pk": "1", "op": "update", "columns": {"body": "edited through the API"}}]}', NULL, 1) AS r \gset
\set st :SQLSTATE
\set msg :LAST_ERROR_MESSAGE
COMMIT;
SELECT kzt.expect(:'st', '00000', 'G Data API: push of an update works', :'msg');
SELECT kzt.is(nullif(:'r', '')::jsonb -> 'verdicts' -> 0 ->> 'verdict', 'applied', 'G Data API: the update is applied');
:pre
\set r ''
SELECT kizunasync.push('{"mutations": [{"mutation_id": "00000000-0000-4000-8000-00000000f402", "table": "g_docs", "pk": "2", "op": "update", "columns": {"body": "not my team"}}]}', NULL, 1) AS r \gset
\set st :SQLSTATE
\set msg :LAST_ERROR_MESSAGE
COMMIT;
SELECT kzt.is(coalesce(nullif(:'r', '')::jsonb -> 'verdicts' -> 0 ->> 'reason', 'SQLSTATE ' || :'st' || ': ' || :'msg'), 'RLS_DENIED',
	'G Data API: control: an update of another team''s doc is RLS_DENIED (the policy is in force)');

-- ------------------------------------ an ordinary LOGIN role, own session
\connect - kz_r_g_user
SET request.jwt.claims = '{"sub": "00000000-0000-4000-8000-0000000000e2", "role": "authenticated"}';
SHOW search_path \gset g_
SELECT kzt.is(:'g_search_path', '"$user", public', 'G login role: control: its search_path is the default one');
\set n ''
SELECT count(*) AS n FROM public.g_docs \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'G login role: a direct SELECT under the policy works', :'LAST_ERROR_MESSAGE');
SELECT kzt.is(nullif(:'n', ''), '1', 'G login role: it sees the team''s doc only');
\set r ''
SELECT kizunasync.pull('[{"table": "g_docs", "params": {"team_id": "00000000-0000-4000-8000-0000000000a7"}}]', '0', 1) AS r \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'G login role: pull of the team''s bucket works', :'LAST_ERROR_MESSAGE');
SELECT kzt.ok((SELECT count(*) FROM jsonb_array_elements(nullif(:'r', '')::jsonb -> 'rows') x WHERE x ->> 'pk' = '1') = 1,
	'G login role: pull delivers the team''s doc', 'got ' || coalesce(nullif(:'r', ''), 'nothing'));
\set r ''
SELECT kizunasync.push('{"mutations": [{"mutation_id": "00000000-0000-4000-8000-00000000f403", "table": "g_docs", "pk": "1", "op": "update", "columns": {"body": "edited by a login role"}}]}', NULL, 1) AS r \gset
SELECT kzt.expect(:'SQLSTATE', '00000', 'G login role: push of an update works', :'LAST_ERROR_MESSAGE');
SELECT kzt.is(nullif(:'r', '')::jsonb -> 'verdicts' -> 0 ->> 'verdict', 'applied', 'G login role: the update is applied');
\set r ''
SELECT kizunasync.push('{"mutations": [{"mutation_id": "00000000-0000-4000-8000-00000000f404", "table": "g_docs", "pk": "2", "op": "delete"}]}', NULL, 1) AS r \gset
SELECT kzt.is(coalesce(nullif(:'r', '')::jsonb -> 'verdicts' -> 0 ->> 'reason', 'SQLSTATE ' || :'SQLSTATE' || ': ' || :'LAST_ERROR_MESSAGE'), 'RLS_DENIED',
	'G login role: control: a delete of another team''s doc is RLS_DENIED');

\connect - postgres
\set ON_ERROR_STOP 1
SELECT kzt.is((SELECT string_agg(body, ' | ' ORDER BY id) FROM public.g_docs), 'edited by a login role | other team''s doc',
	'G: both updates landed, the other team''s doc is untouched');
