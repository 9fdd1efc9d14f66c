-- O. Bucket numbers nobody can make collide (decisions/0092, "Bucket numbers").
-- db: kz_roles_o
-- plan: 12
--
-- The entries carry a bucket's number, not its label.  Before this test
-- the number was lookup3 (hash_bytes_extended) of the label seeded with
-- the table's id: invertible, so an ordinary user could make a label of
-- her own with the number of a label she cannot see.  kz_r_o_mallory
-- (LOGIN, member of authenticated, her own session and JWT sub) is a
-- member of list 'mallory-spy1uPd6rkbguHvo', whose lookup3 number for
-- table 1 is that of kz_r_o_alice's private list 'alice-private' (made by
-- a second-preimage search of lookup3; checked below with
-- hashtextextended, the same function).  On the unkeyed numbers
-- mallory's pulls carried a tombstone with the key of every row of
-- alice's list (enumeration on a re-pull, live activity on each delta),
-- her push answered DELETE_WINS for alice's deleted keys (an oracle), and
-- alice's stale re-insert of her own deleted row was applied.  Now the
-- number is SipHash-2-4 with the table's random synced_tables.bucket_key,
-- which no API role can read.
--
-- Part 2: a label recorded in the dictionary (kizunasync.buckets) by a
-- transaction that then rolled back is never taken for committed: the
-- backend's label cache used to be dropped whole by a rolled-back
-- savepoint, after which the transaction's own uncommitted row counted as
-- committed, and a later transaction of the same backend (a pooled
-- connection) recorded entries under a label with no dictionary row: the
-- views showed no bucket value and DELETE_WINS was lost.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE ROLE kz_r_o_alice LOGIN NOSUPERUSER;
CREATE ROLE kz_r_o_mallory LOGIN NOSUPERUSER;
GRANT authenticated TO kz_r_o_alice, kz_r_o_mallory;
CREATE TABLE public.o_members (list_id text, user_id uuid, PRIMARY KEY (list_id, user_id));
CREATE TABLE public.o_items (id text PRIMARY KEY, list_id text NOT NULL, body text);
ALTER TABLE public.o_items ENABLE ROW LEVEL SECURITY;
CREATE POLICY member ON public.o_items TO authenticated
	USING (list_id IN (SELECT m.list_id FROM public.o_members m WHERE m.user_id = auth.uid()))
	WITH CHECK (list_id IN (SELECT m.list_id FROM public.o_members m WHERE m.user_id = auth.uid()));
GRANT SELECT ON public.o_members TO authenticated;
GRANT SELECT, INSERT, UPDATE, DELETE ON public.o_items TO authenticated;
INSERT INTO public.o_members VALUES
	('alice-private', '00000000-0000-4000-8000-0000000000a1'),
	('chores', '00000000-0000-4000-8000-0000000000a1'),
	('mallory-spy1uPd6rkbguHvo', '00000000-0000-4000-8000-0000000000b2');
INSERT INTO public.o_items VALUES
	('ceo@victim.example', 'alice-private', 'secret 1'),
	('lawyer@victim.example', 'alice-private', 'secret 2'),
	('m1', 'mallory-spy1uPd6rkbguHvo', 'mallory''s own row');
SELECT kizunasync.sync_table('public.o_items', bucket_column => 'list_id') IS NOT NULL AS synced \gset
RESET client_min_messages;
-- the preconditions that make the rest mean something
SELECT kzt.is((SELECT id FROM kizunasync.synced_tables WHERE table_name = 'o_items'), 1,
	'o_items is synced table number 1 (the crafted label is for number 1)');
SELECT kzt.ok(hashtextextended('alice-private', 1) & 9223372036854775807
			  = hashtextextended('mallory-spy1uPd6rkbguHvo', 1) & 9223372036854775807,
	'the two labels share their unkeyed (lookup3) number for table 1');
SELECT kzt.is((SELECT count(DISTINCT bucket) FROM kizunasync.entries WHERE tid = 1), 2::bigint,
	'the keyed numbers of the two labels differ');

\set q_m '[{"table": "o_items", "params": {"list_id": "mallory-spy1uPd6rkbguHvo"}}]'
\set q_a '[{"table": "o_items", "params": {"list_id": "alice-private"}}]'
\set pre_m 'BEGIN; SET LOCAL ROLE authenticated; SELECT set_config(''request.jwt.claims'', ''{"sub": "00000000-0000-4000-8000-0000000000b2", "role": "authenticated"}'', true) IS NULL AS no \\gset'
\set pre_a 'BEGIN; SET LOCAL ROLE authenticated; SELECT set_config(''request.jwt.claims'', ''{"sub": "00000000-0000-4000-8000-0000000000a1", "role": "authenticated"}'', true) IS NULL AS no \\gset'

-- ------------------------------------------------ mallory: her own list
\connect - kz_r_o_mallory
\set ON_ERROR_STOP 1
:pre_m
SELECT kizunasync.pull(buckets => :'q_m', cursor => '0', schema_version => 1) AS p \gset
COMMIT;
SELECT :'p'::jsonb ->> 'cursor' AS c_m \gset
-- a device reset: the same pull from cursor 0 again, now holding the grant
:pre_m
SELECT kizunasync.pull(buckets => :'q_m', cursor => '0', schema_version => 1) AS p \gset
COMMIT;
SELECT kzt.expect((SELECT string_agg(r ->> 'pk', ',') FROM jsonb_array_elements(:'p'::jsonb -> 'rows') r)
	|| ' / ' || jsonb_array_length(:'p'::jsonb -> 'tombstones'), 'm1 / 0',
	'mallory''s re-pull of her list holds her row and no tombstone of another list');
SELECT kzt.try($$SELECT bucket_key FROM kizunasync.synced_tables$$) AS t \gset
SELECT kzt.ok(:'t' LIKE '42501%', 'mallory cannot read the tables'' bucket keys', :'t');

-- ------------------------------------- alice: works in her private list
\connect - kz_r_o_alice
\set ON_ERROR_STOP 1
:pre_a
SELECT kizunasync.pull(buckets => :'q_a', cursor => '0', schema_version => 1) AS p \gset
COMMIT;
SELECT :'p'::jsonb ->> 'cursor' AS c_a \gset
:pre_a
INSERT INTO public.o_items VALUES ('new-hire@victim.example', 'alice-private', 'secret 3');
DELETE FROM public.o_items WHERE id = 'ceo@victim.example';
COMMIT;

\connect - kz_r_o_mallory
\set ON_ERROR_STOP 1
:pre_m
INSERT INTO public.o_items SELECT 'junk-' || g, 'mallory-spy1uPd6rkbguHvo', 'x' FROM generate_series(1, 20) g;
COMMIT;
:pre_m
SELECT kizunasync.pull(buckets => :'q_m', cursor => :'c_m', schema_version => 1) AS p \gset
COMMIT;
SELECT kzt.ok(:'p'::jsonb::text NOT LIKE '%victim.example%'
			  AND jsonb_array_length(:'p'::jsonb -> 'rows') = 20
			  AND jsonb_array_length(:'p'::jsonb -> 'tombstones') = 0,
	'mallory''s delta holds her 20 new rows and nothing of alice''s list', :'p');
-- push: alice's deleted key is answered as a never-used one
:pre_m
SELECT (kizunasync.push(batch => kzt.m('o_items', 'ceo@victim.example', 'insert', '{"columns": {"list_id": "mallory-spy1uPd6rkbguHvo"}}', 'e1'),
	last_mutation_id => NULL, schema_version => 1) -> 'verdicts' -> 0) - 'mutation_id' AS v_deleted \gset
ROLLBACK;
:pre_m
SELECT (kizunasync.push(batch => kzt.m('o_items', 'never-used@victim.example', 'insert', '{"columns": {"list_id": "mallory-spy1uPd6rkbguHvo"}}', 'e2'),
	last_mutation_id => NULL, schema_version => 1) -> 'verdicts' -> 0) - 'mutation_id' AS v_never \gset
ROLLBACK;
SELECT kzt.expect(:'v_deleted', :'v_never',
	'mallory''s push of a key alice deleted is answered as a never-used key (no oracle)');

\connect - kz_r_o_alice
\set ON_ERROR_STOP 1
:pre_a
SELECT kizunasync.pull(buckets => :'q_a', cursor => :'c_a', schema_version => 1) AS p \gset
COMMIT;
SELECT kzt.expect((SELECT string_agg(r ->> 'pk', ',' ORDER BY r ->> 'pk') FROM jsonb_array_elements(:'p'::jsonb -> 'rows') r)
	|| ' / ' || (SELECT string_agg(r ->> 'pk', ',' ORDER BY r ->> 'pk') FROM jsonb_array_elements(:'p'::jsonb -> 'tombstones') r),
	'new-hire@victim.example / ceo@victim.example',
	'alice''s delta holds her new row and her delete, nothing of mallory''s list');
:pre_a
SELECT kizunasync.push(batch => kzt.m('o_items', 'ceo@victim.example', 'insert', '{"columns": {"list_id": "alice-private", "body": "stale"}}', 'e3'),
	last_mutation_id => NULL, schema_version => 1) #>> '{verdicts,0,reason}' AS v_stale \gset
COMMIT;
SELECT kzt.expect(:'v_stale', 'DELETE_WINS', 'alice''s stale re-insert of her deleted row: DELETE_WINS');

-- ------------------------- part 2: a rolled-back savepoint's dictionary
:pre_a
INSERT INTO public.o_items (id, list_id) VALUES ('c0', 'chores');
SAVEPOINT s;
\set ON_ERROR_STOP 0
INSERT INTO public.o_items (id, list_id) VALUES ('c0', 'chores');
\set ON_ERROR_STOP 1
ROLLBACK TO SAVEPOINT s;
INSERT INTO public.o_items (id, list_id) VALUES ('c1', 'chores');
ROLLBACK;
-- the same backend, as a pooled connection: the label is recorded again
:pre_a
INSERT INTO public.o_items (id, list_id, body) VALUES ('c2', 'chores', 'sweep');
COMMIT;
:pre_a
SELECT jsonb_array_length(kizunasync.pull(buckets => '[{"table": "o_items", "params": {"list_id": "chores"}}]',
	cursor => '0', schema_version => 1) -> 'rows') AS n \gset
COMMIT;
:pre_a
DELETE FROM public.o_items WHERE id = 'c2';
COMMIT;
:pre_a
SELECT kizunasync.push(batch => kzt.m('o_items', 'c2', 'insert', '{"columns": {"list_id": "chores", "body": "stale"}}', 'e4'),
	last_mutation_id => NULL, schema_version => 1) #>> '{verdicts,0,reason}' AS v_chores \gset
COMMIT;
SELECT kzt.expect(:'n' || ' ' || :'v_chores', '1 DELETE_WINS',
	'after a rolled-back savepoint and a rollback, the label is recorded again: the stale re-insert gets DELETE_WINS');

\connect - postgres
\set ON_ERROR_STOP 1
SELECT kzt.is((SELECT count(*) FROM kizunasync.buckets WHERE label = 'chores'), 1::bigint,
	'the label has one dictionary row, the committed one');
SELECT kzt.is((SELECT bucket_value FROM kizunasync.tombstones WHERE pk = 'c2'), 'chores'::text,
	'the tombstone view reads the label back');
