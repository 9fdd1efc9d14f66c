-- L. Push is no oracle of deleted keys (issue 23 item 10).
-- db: kz_roles_l
-- plan: 18
--
-- l_handles is keyed by a handle (text) and each user owns its rows (RLS).
-- alice (an ordinary LOGIN role, member of authenticated, its own JWT sub)
-- creates handles and deletes them, by push and by plain SQL; she pulled
-- her bucket, so she holds its grant.  bob (another such role, another
-- sub) never received a row of alice's bucket.  Before the fix push looked
-- for a tombstone of the key in every bucket, as the extension owner,
-- before bob's own statements ran: bob's insert of a handle alice had
-- deleted answered RLS_DENIED (a never-used handle: applied), so bob
-- learnt which handles had existed, and no push could re-create them until
-- the tombstones were reaped, though bob's plain INSERT under the same RLS
-- succeeds.  Now a tombstone counts only for a caller holding the grant of
-- its bucket: bob is answered as his own statements are under his
-- policies, alice (who knew the row) still gets DELETE_WINS.  Each user
-- acts in its own session, as a LOGIN role and through the Data API shape
-- (authenticator, SET LOCAL ROLE authenticated, claims, named arguments).
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE TABLE public.l_handles (handle text PRIMARY KEY, owner_id uuid NOT NULL, note text);
ALTER TABLE public.l_handles ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON public.l_handles TO authenticated
	USING (owner_id = auth.uid()) WITH CHECK (owner_id = auth.uid());
GRANT SELECT, INSERT, UPDATE, DELETE ON public.l_handles TO authenticated;
SELECT kizunasync.sync_table('public.l_handles', bucket_column => 'owner_id', key_columns => '{handle}') AS n \gset
CREATE ROLE kz_r_l_alice LOGIN NOSUPERUSER;
CREATE ROLE kz_r_l_bob LOGIN NOSUPERUSER;
GRANT authenticated TO kz_r_l_alice, kz_r_l_bob;
-- a verdict without its mutation id, to compare answers
CREATE FUNCTION public.l_answer(r jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
	SELECT (r -> 'verdicts' -> 0) - 'mutation_id'
$$;
GRANT EXECUTE ON FUNCTION public.l_answer(jsonb) TO PUBLIC;
RESET client_min_messages;

-- ------------------------------------------- alice: create, pull, delete
\connect - kz_r_l_alice
\set ON_ERROR_STOP 1
SET request.jwt.claims = '{"sub": "00000000-0000-4000-8000-0000000000a1", "role": "authenticated"}';
SELECT kzt.is((SELECT string_agg(v ->> 'verdict', ',') FROM jsonb_array_elements(kizunasync.push(jsonb_build_object('mutations',
		(kzt.m('l_handles', 'acme', 'insert', '{"columns": {"owner_id": "00000000-0000-4000-8000-0000000000a1"}}', 'f1') -> 'mutations')
		|| (kzt.m('l_handles', 'zeta', 'insert', '{"columns": {"owner_id": "00000000-0000-4000-8000-0000000000a1"}}', 'f2') -> 'mutations')
		|| (kzt.m('l_handles', 'omega', 'insert', '{"columns": {"owner_id": "00000000-0000-4000-8000-0000000000a1"}}', 'f3') -> 'mutations')
		|| (kzt.m('l_handles', 'kappa', 'insert', '{"columns": {"owner_id": "00000000-0000-4000-8000-0000000000a1"}}', 'f4') -> 'mutations')),
		NULL, 1) -> 'verdicts') v), 'applied,applied,applied,applied',
	'L alice: pushes four handles');
SELECT kzt.is(jsonb_array_length(kizunasync.pull(kzt.bucket('l_handles', '{"owner_id": "00000000-0000-4000-8000-0000000000a1"}'),
		'0', 1) -> 'rows'), 4, 'L alice: pulls her four rows (her bucket''s grant)');
SELECT kzt.is(kizunasync.push(kzt.m('l_handles', 'acme', 'delete', '{}', 'f5'), NULL, 1) #>> '{verdicts,0,verdict}',
	'applied', 'L alice: deletes acme by push');
DELETE FROM public.l_handles WHERE handle IN ('zeta', 'omega', 'kappa');
SELECT kzt.expect_rows(:'SQLSTATE', :ROW_COUNT, '00000', 'L alice: deletes zeta, omega and kappa by plain SQL', :'LAST_ERROR_MESSAGE');

-- ----------------------------- bob: the deleted handles are not an oracle
\connect - kz_r_l_bob
\set ON_ERROR_STOP 1
SET request.jwt.claims = '{"sub": "00000000-0000-4000-8000-0000000000b1", "role": "authenticated"}';
SELECT kzt.is(jsonb_array_length(kizunasync.pull(kzt.bucket('l_handles', '{"owner_id": "00000000-0000-4000-8000-0000000000b1"}'),
		'0', 1) -> 'rows'), 0, 'L bob: control: his own bucket is empty');
-- the same question about a deleted and a never-used handle gets the same answer
SELECT kzt.is(public.l_answer(kizunasync.push(kzt.m('l_handles', 'omega', 'update', '{"columns": {"note": "x"}}', 'f6'), NULL, 1)),
	public.l_answer(kizunasync.push(kzt.m('l_handles', 'never-used-1', 'update', '{"columns": {"note": "x"}}', 'f7'), NULL, 1)),
	'L bob: an update of a handle alice deleted is answered as one of a never-used handle');
SELECT kzt.is(public.l_answer(kizunasync.push(kzt.m('l_handles', 'omega', 'delete', '{}', 'f8'), NULL, 1)),
	public.l_answer(kizunasync.push(kzt.m('l_handles', 'never-used-2', 'delete', '{}', 'f9'), NULL, 1)),
	'L bob: a delete of a handle alice deleted is answered as one of a never-used handle');
SELECT kzt.is(kizunasync.push(kzt.m('l_handles', 'fresh', 'insert', '{"columns": {"owner_id": "00000000-0000-4000-8000-0000000000b1"}}', 'fa'), NULL, 1) #>> '{verdicts,0,verdict}',
	'applied', 'L bob: control: an insert of a never-used handle is applied');
-- an insert of a handle alice deleted by push: decided as bob's own INSERT
\set r ''
SELECT kizunasync.push(kzt.m('l_handles', 'acme', 'insert', '{"columns": {"owner_id": "00000000-0000-4000-8000-0000000000b1", "note": "bob"}}', 'fb'), NULL, 1) AS r \gset
SELECT kzt.is(public.l_answer(:'r'), '{"verdict": "applied"}'::jsonb,
	'L bob: an insert of a handle alice deleted by push is applied (no RLS_DENIED from her tombstone)');
-- the plain INSERT under the same RLS, for comparison
INSERT INTO public.l_handles VALUES ('zeta', '00000000-0000-4000-8000-0000000000b1', 'bob plain');
SELECT kzt.expect_rows(:'SQLSTATE', :ROW_COUNT, '00000', 'L bob: control: his plain INSERT of a handle alice deleted succeeds', :'LAST_ERROR_MESSAGE');

-- ------------------------------------------------- bob through the Data API
\connect - authenticator
\set ON_ERROR_STOP 0
\set pre 'BEGIN; SET LOCAL ROLE authenticated; SELECT set_config(''request.jwt.claims'', ''{"sub": "00000000-0000-4000-8000-0000000000b1", "role": "authenticated"}'', true) IS NULL AS no \\gset'
:pre
\set r ''
SELECT kizunasync.push(batch => kzt.m('l_handles', 'omega', 'insert', '{"columns": {"owner_id": "00000000-0000-4000-8000-0000000000b1"}}', 'fd'),
	last_mutation_id => NULL, schema_version => 1) AS r \gset
\set st :SQLSTATE
\set msg :LAST_ERROR_MESSAGE
COMMIT;
SELECT kzt.is(coalesce(public.l_answer(nullif(:'r', '')::jsonb) ->> 'verdict', 'SQLSTATE ' || :'st' || ': ' || :'msg'), 'applied',
	'L bob Data API: an insert of a handle alice deleted by plain SQL is applied');

-- ------------------------------------------------ alice, who knew the rows
\connect - kz_r_l_alice
\set ON_ERROR_STOP 1
SET request.jwt.claims = '{"sub": "00000000-0000-4000-8000-0000000000a1", "role": "authenticated"}';
SELECT kzt.is(kizunasync.push(kzt.m('l_handles', 'kappa', 'insert', '{"columns": {"owner_id": "00000000-0000-4000-8000-0000000000a1"}}', 'fe'), NULL, 1) #>> '{verdicts,0,reason}',
	'DELETE_WINS', 'L alice: her re-insert of kappa, deleted in her bucket, is DELETE_WINS (no resurrection)');
SELECT kzt.is(kizunasync.push(kzt.m('l_handles', 'kappa', 'update', '{"columns": {"note": "late"}}', 'ff'), NULL, 1) #>> '{verdicts,0,reason}',
	'DELETE_WINS', 'L alice: her late update of kappa is DELETE_WINS');
-- acme was re-created by bob: her old tombstone no longer counts, the row is bob's
SELECT kzt.is(kizunasync.push(kzt.m('l_handles', 'acme', 'update', '{"columns": {"note": "mine?"}}', 'f10'), NULL, 1) -> 'verdicts' -> 0 ->> 'reason',
	'RLS_DENIED', 'L alice: an update of acme, now bob''s, is RLS_DENIED');
-- a live row of alice's, for bob's control below
INSERT INTO public.l_handles VALUES ('taken2', '00000000-0000-4000-8000-0000000000a1', 'alice');
SELECT kzt.expect_rows(:'SQLSTATE', :ROW_COUNT, '00000', 'L alice: creates taken2', :'LAST_ERROR_MESSAGE');

\connect - kz_r_l_bob
\set ON_ERROR_STOP 1
SET request.jwt.claims = '{"sub": "00000000-0000-4000-8000-0000000000b1", "role": "authenticated"}';
SELECT kzt.is(kizunasync.push(kzt.m('l_handles', 'taken2', 'insert', '{"columns": {"owner_id": "00000000-0000-4000-8000-0000000000b1"}}', 'f11'), NULL, 1) #>> '{verdicts,0,reason}',
	'RLS_DENIED', 'L bob: control: an insert over alice''s live row is refused (RLS_DENIED)');
SELECT kzt.is((SELECT string_agg(x ->> 'pk', ',' ORDER BY x ->> 'pk')
				 FROM jsonb_array_elements(kizunasync.pull(kzt.bucket('l_handles', '{"owner_id": "00000000-0000-4000-8000-0000000000b1"}'),
											 '0', 1) -> 'rows') x),
	'acme,fresh,omega,zeta', 'L bob: pulls the handles he created, the re-created ones included');

\connect - postgres
\set ON_ERROR_STOP 1
SELECT kzt.is((SELECT string_agg(handle || ':' || right(owner_id::text, 2), ',' ORDER BY handle) FROM public.l_handles),
	'acme:b1,fresh:b1,omega:b1,taken2:a1,zeta:b1', 'L: the table holds what each user was answered');
