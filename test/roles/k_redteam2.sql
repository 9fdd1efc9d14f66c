-- K. Third red-team pass (statement batching, the writers' section, read-only
-- pulls, repair/sync/unsync by non-owners): defects found, and attacks that
-- fail safely, kept so they stay covered.
-- db: kz_roles_k_red2
-- owner: kz_r_k2_dbo
-- plan: 31
--
-- Each as an ordinary LOGIN role in its own session:
--   K1 (DEFECT on main 8df535e) a non-atomic push whose mutation is rejected
--      before its unit runs (COLUMN_DENIED, DELETE_WINS, RLS_DENIED by a
--      tombstone) discarded the whole per-mutation capture queue, including
--      the changes of writes that ran outside the unit's subtransaction and
--      stay committed: a policy's audit function inserting into a synced
--      table during the locked render.  The row was committed with no
--      changelog entry, so no client ever pulled it.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE ROLE kz_r_k2_api LOGIN NOSUPERUSER;
CREATE ROLE kz_r_k2_plain LOGIN NOSUPERUSER;
GRANT authenticated TO kz_r_k2_api;
GRANT kz_r_k2_plain TO kz_r_k2_api;
RESET client_min_messages;

-- ---------------------------------------------------------------- K1
\connect - kz_r_k2_dbo
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE TABLE public.k1_audit (id bigserial PRIMARY KEY, note text NOT NULL);
ALTER TABLE public.k1_audit ENABLE ROW LEVEL SECURITY;
CREATE POLICY all_auth ON public.k1_audit TO authenticated USING (true);
GRANT SELECT ON public.k1_audit TO authenticated;
-- the policy's audit function: a SECURITY DEFINER insert into a synced table
CREATE FUNCTION public.k1_seen(i bigint) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	INSERT INTO public.k1_audit (note) VALUES ('seen ' || i);
	RETURN true;
END $$;
CREATE TABLE public.k1_items (id bigint PRIMARY KEY, v text, locked text);
ALTER TABLE public.k1_items ENABLE ROW LEVEL SECURITY;
CREATE POLICY audited ON public.k1_items TO authenticated USING (public.k1_seen(id)) WITH CHECK (true);
GRANT SELECT, INSERT, DELETE ON public.k1_items TO authenticated;
GRANT UPDATE (v) ON public.k1_items TO authenticated;
INSERT INTO public.k1_items VALUES (1, 'a', 'l');
SELECT kizunasync.sync_table('public.k1_items') AS n \gset
SELECT kizunasync.sync_table('public.k1_audit') AS n \gset
RESET client_min_messages;

\connect - kz_r_k2_api
\set ON_ERROR_STOP 1
SET request.jwt.claims = '{"sub": "00000000-0000-4000-8000-0000000000c1", "role": "authenticated"}';
-- column "locked" is not granted: COLUMN_DENIED, decided after the locked render
SELECT kzt.is(kizunasync.push(kzt.m('k1_items', '1', 'update', '{"columns": {"locked": "x"}}', 'c101'),
							  NULL, 1) #>> '{verdicts,0,reason}',
	'COLUMN_DENIED', 'K1: a push of an ungranted column is rejected (COLUMN_DENIED)');
-- an applied mutation in the same shape, as a control
SELECT kzt.is(kizunasync.push(kzt.m('k1_items', '1', 'update', '{"columns": {"v": "b"}}', 'c102'),
							  NULL, 1) #>> '{verdicts,0,verdict}',
	'applied', 'K1: control: a push of a granted column is applied');

-- atomic: the abort rolls the batch back (the audit rows of its renders
-- with it); the abort's server_row is rendered after, and audited again
SELECT kzt.is(kizunasync.push(jsonb_build_object('atomic', true, 'mutations',
		kzt.m('k1_items', '1', 'update', '{"columns": {"v": "c"}}', 'c103') -> 'mutations'
		|| (kzt.m('k1_items', '1', 'update', '{"columns": {"locked": "y"}}', 'c104') -> 'mutations')),
							  NULL, 1) #>> '{batch,reason}',
	'COLUMN_DENIED', 'K1: an atomic push with a COLUMN_DENIED mutation is aborted');

-- the bookkeeping is read by the superuser (the checker, not an actor)
\connect - postgres
\set ON_ERROR_STOP 1
SELECT kzt.ok(count(*) >= 2, 'K1: the policy''s audit function wrote its rows during the pushes (committed)')
  FROM public.k1_audit;
SELECT kzt.is(string_agg(a.note, ', ' ORDER BY a.id), NULL,
	'K1: every committed k1_audit row has its changelog entry (none skipped when a mutation is rejected)')
  FROM public.k1_audit a
 WHERE NOT EXISTS (SELECT 1 FROM kizunasync.changelog c
					WHERE c.table_name OPERATOR(pg_catalog.=) 'k1_audit' AND c.pk OPERATOR(pg_catalog.=) a.id::text);
SELECT kzt.is((SELECT string_agg(c.table_name || ':' || c.pk, ', ') FROM kizunasync.changelog c
				WHERE (c.table_name = 'k1_audit' AND NOT EXISTS (SELECT 1 FROM public.k1_audit a WHERE a.id::text = c.pk))
				   OR (c.table_name = 'k1_items' AND NOT EXISTS (SELECT 1 FROM public.k1_items i
																  WHERE i.id::text = c.pk AND i.xmin = c.row_xmin))),
	NULL, 'K1: and the rejected units recorded nothing (no entry of a row version that did not commit)');

-- ---------------------------------------------------------------- K2
-- Statement batching (capture_batch.c) under role changes, nested and
-- deferred triggers, savepoints, cursors, COPY as a session's first write,
-- a prepared transaction: every committed row version has its entry with
-- its own xmin, every deleted row its tombstone (checked by the superuser).
\connect - kz_r_k2_dbo
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE TABLE public.k2_t (id bigint PRIMARY KEY, v text, n int NOT NULL DEFAULT 0);
-- no RLS (COPY FROM needs none; sync_table warns)
CREATE TABLE public.k2_side (id bigint PRIMARY KEY, v text);
CREATE TABLE public.k2_src (id bigint PRIMARY KEY);
GRANT SELECT, INSERT, UPDATE, DELETE ON public.k2_t, public.k2_side, public.k2_src TO kz_r_k2_plain, kz_r_k2_api;
-- an application trigger of the owner: per row of k2_t, in an exception
-- block, it writes k2_side; rows with id % 7 = 0 raise after the write
CREATE FUNCTION public.k2_side_write() RETURNS trigger LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	BEGIN
		INSERT INTO public.k2_side VALUES (NEW.id, 'side ' || NEW.v)
			ON CONFLICT (id) DO UPDATE SET v = EXCLUDED.v;
		IF NEW.id % 7 = 0 THEN
			RAISE EXCEPTION 'k2 undo' USING ERRCODE = 'KZ002';
		END IF;
	EXCEPTION WHEN sqlstate 'KZ002' THEN
		NULL;
	END;
	RETURN NULL;
END $$;
CREATE TRIGGER zz_side AFTER INSERT OR UPDATE ON public.k2_t FOR EACH ROW
	WHEN (pg_trigger_depth() < 1) EXECUTE FUNCTION public.k2_side_write();
-- an AFTER STATEMENT trigger with a transition table that writes k2_t again
CREATE FUNCTION public.k2_again() RETURNS trigger LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	UPDATE public.k2_t t SET n = t.n + 1 FROM newrows WHERE t.id = newrows.id AND newrows.id % 5 = 0;
	RETURN NULL;
END $$;
CREATE TRIGGER zz_again AFTER UPDATE ON public.k2_t REFERENCING NEW TABLE AS newrows
	FOR EACH STATEMENT WHEN (pg_trigger_depth() < 1) EXECUTE FUNCTION public.k2_again();
-- a deferred constraint trigger on an unsynced table that writes k2_t at commit
CREATE FUNCTION public.k2_deferred() RETURNS trigger LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	INSERT INTO public.k2_t (id, v) VALUES (100000 + NEW.id, 'deferred') ON CONFLICT (id) DO UPDATE SET v = 'deferred again';
	RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER k2_def AFTER INSERT ON public.k2_src DEFERRABLE INITIALLY DEFERRED
	FOR EACH ROW EXECUTE FUNCTION public.k2_deferred();
-- a SECURITY DEFINER function of the owner that writes k2_t
CREATE FUNCTION public.k2_definer(i bigint) RETURNS void LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
	UPDATE public.k2_t SET v = 'definer ' || current_user WHERE id = i;
	DELETE FROM public.k2_side WHERE id = i + 1;
$$;
-- a function that sets the role locally and writes (SET LOCAL role in app code)
CREATE FUNCTION public.k2_setrole(i bigint) RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	UPDATE public.k2_t SET v = 'before set role' WHERE id = i;
	PERFORM set_config('role', 'kz_r_k2_plain', true);
	UPDATE public.k2_t SET v = 'after set role ' || current_user WHERE id = i + 1;
END $$;
GRANT EXECUTE ON FUNCTION public.k2_definer(bigint), public.k2_setrole(bigint) TO kz_r_k2_api, kz_r_k2_plain;
INSERT INTO public.k2_t SELECT g, 'seed' FROM generate_series(1, 40) g;
SELECT kizunasync.sync_table('public.k2_t') AS n \gset
SELECT kizunasync.sync_table('public.k2_side') AS n \gset
RESET client_min_messages;

-- the first synced write of the writer's session is a COPY (the library
-- loads from its trigger), in a transaction that goes on with savepoints,
-- role changes, a SECURITY DEFINER call and a cursor
\connect - kz_r_k2_api
\set ON_ERROR_STOP 1
BEGIN;
COPY public.k2_t (id, v) FROM STDIN;
2001	copied
2002	copied
2007	copied
\.
SAVEPOINT a;
UPDATE public.k2_t SET v = 'in a' WHERE id BETWEEN 1 AND 30;
RELEASE a;
SAVEPOINT b;
UPDATE public.k2_t SET v = 'in b, rolled back' WHERE id BETWEEN 5 AND 35;
DELETE FROM public.k2_t WHERE id = 3;
ROLLBACK TO b;
SET LOCAL ROLE kz_r_k2_plain;
DELETE FROM public.k2_t WHERE id = 4;
RESET ROLE;
SELECT public.k2_definer(6);
SELECT public.k2_setrole(8);
RESET ROLE;
DECLARE k2c CURSOR FOR SELECT public.k2_definer(g) FROM generate_series(10, 14) g;
FETCH 2 FROM k2c;
CLOSE k2c;
INSERT INTO public.k2_src VALUES (1), (2);
COMMIT;
-- the same in a prepared transaction, committed by the owner's session below;
-- it holds more changes than a prepared transaction's default share (3 here),
-- which the superuser raised for this role's sessions meanwhile (it lowers
-- their write-time share to 0: decisions/0010, "Prepared transactions";
-- prepared_txn.spec tests the refusal)
\connect - postgres
ALTER ROLE kz_r_k2_api IN DATABASE kz_roles_k_red2 SET kizunasync.prepared_changes = 64;
\connect - kz_r_k2_api
\set ON_ERROR_STOP 1
BEGIN;
COPY public.k2_t (id, v) FROM STDIN;
3001	prepared
\.
UPDATE public.k2_t SET v = 'prepared' WHERE id BETWEEN 15 AND 20;
INSERT INTO public.k2_src VALUES (3);
PREPARE TRANSACTION 'kz_k2_prep';
COMMIT PREPARED 'kz_k2_prep';

\connect - postgres
\set ON_ERROR_STOP 1
ALTER ROLE kz_r_k2_api IN DATABASE kz_roles_k_red2 RESET kizunasync.prepared_changes;
SELECT kzt.is(string_agg(format('%s/%s', t.id, t.v), ', ' ORDER BY t.id), NULL,
	'K2: every committed k2_t row version has its entry (its own xmin)')
  FROM public.k2_t t
 WHERE NOT EXISTS (SELECT 1 FROM kizunasync.changelog c
					WHERE c.table_name = 'k2_t' AND c.pk = t.id::text AND c.row_xmin = t.xmin);
SELECT kzt.is(string_agg(format('%s/%s', t.id, t.v), ', ' ORDER BY t.id), NULL,
	'K2: every committed k2_side row version has its entry (writes of exception blocks included)')
  FROM public.k2_side t
 WHERE NOT EXISTS (SELECT 1 FROM kizunasync.changelog c
					WHERE c.table_name = 'k2_side' AND c.pk = t.id::text AND c.row_xmin = t.xmin);
SELECT kzt.is((SELECT string_agg(c.pk, ', ' ORDER BY c.pk) FROM kizunasync.changelog c
				WHERE c.table_name IN ('k2_t', 'k2_side')
				  AND NOT EXISTS (SELECT 1 FROM public.k2_t t WHERE c.table_name = 'k2_t' AND t.id::text = c.pk)
				  AND NOT EXISTS (SELECT 1 FROM public.k2_side s WHERE c.table_name = 'k2_side' AND s.id::text = c.pk)),
	NULL, 'K2: no entry names a row that does not exist (rolled-back writes left none)');
SELECT kzt.is((SELECT string_agg(table_name || ':' || pk, ', ' ORDER BY table_name, pk) FROM kizunasync.tombstones
				WHERE table_name IN ('k2_t', 'k2_side')),
	'k2_side:12, k2_t:4', 'K2: the deleted rows (two by the cursor''s fetched rows) that are not back, and only they, have tombstones (k2_side 11 is back: its row entry replaced its tombstone, decisions/0092)');
SELECT kzt.ok((SELECT count(*) FROM public.k2_t WHERE id > 100000) = 3
		  AND (SELECT count(*) FROM public.k2_t WHERE v LIKE 'after set role kz_r_k2_plain') = 1
		  AND (SELECT count(*) FROM public.k2_t WHERE v = 'definer kz_r_k2_dbo') = 3,
	'K2: control: the deferred trigger, SET LOCAL role and SECURITY DEFINER writes happened');

-- ---------------------------------------------------------------- K3
-- statement_timeout at many points of big batched statements (their flush
-- and the writers' section included), each cancel caught in a savepoint of
-- the writer's own DO block that goes on writing, then commits: the
-- committed versions all have entries, and the writer is back to itself.
\connect - kz_r_k2_dbo
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE TABLE public.k3_t (id bigint PRIMARY KEY, v text);
GRANT SELECT, INSERT, UPDATE, DELETE ON public.k3_t TO kz_r_k2_plain;
INSERT INTO public.k3_t SELECT g, 'seed' FROM generate_series(1, 6000) g;
SELECT kizunasync.sync_table('public.k3_t') AS n \gset
RESET client_min_messages;
\connect - kz_r_k2_plain
\set ON_ERROR_STOP 1
CREATE TEMP TABLE k3_log (ms int, outcome text, cu name, bk text);
-- a cancel outside the inner block rolls the round back: not an error of the file
\set ON_ERROR_STOP 0
SELECT 'BEGIN', format('SET LOCAL statement_timeout = %s', ms), format($do$DO $b$
DECLARE
	bk text := 'readable';
BEGIN
	BEGIN
		UPDATE public.k3_t SET v = 'round %s ' || id WHERE id %% 3 = %s;
		INSERT INTO pg_temp.k3_log VALUES (%s, 'completed', current_user, NULL);
	EXCEPTION WHEN query_canceled THEN
		BEGIN
			PERFORM 1 FROM kizunasync.changelog LIMIT 1;
		EXCEPTION WHEN insufficient_privilege THEN
			bk := 'denied';
		END;
		INSERT INTO pg_temp.k3_log VALUES (%s, 'cancelled', current_user, bk);
	END;
	UPDATE public.k3_t SET v = 'after round %s' WHERE id = %s;
END $b$$do$, ms, ms % 3, ms, ms, ms, ms + 1), 'COMMIT'
  FROM generate_series(1, 60) ms \gexec
\set ON_ERROR_STOP 1
SELECT kzt.diag(format('K3: %s big updates cancelled and caught, %s completed',
	count(*) FILTER (WHERE outcome = 'cancelled'), count(*) FILTER (WHERE outcome = 'completed'))) FROM k3_log;
SELECT kzt.is(string_agg(DISTINCT format('%s/%s', cu, bk), ', '), 'kz_r_k2_plain/denied',
	'K3: after every caught cancel the writer is itself, without bookkeeping access')
  FROM k3_log WHERE outcome = 'cancelled';
\connect - postgres
\set ON_ERROR_STOP 1
SELECT kzt.is(count(*), 0::bigint, 'K3: every committed k3_t version has its entry after the cancels')
  FROM public.k3_t t
 WHERE NOT EXISTS (SELECT 1 FROM kizunasync.changelog c
					WHERE c.table_name = 'k3_t' AND c.pk = t.id::text AND c.row_xmin = t.xmin);
SELECT kzt.is(count(*), 6000::bigint, 'K3: and k3_t has exactly one entry per row')
  FROM kizunasync.changelog WHERE table_name = 'k3_t';

-- ---------------------------------------------------------------- K4
-- (DEFECT on main 8df535e) sync_table of a temporary table: the session's
-- end drops it without firing the sql_drop event trigger, so its
-- synced_tables row, its wire name and its entries stayed behind for good
-- (a later sync_table under that name failed; only a superuser could clean
-- up); the relid could later name another relation.
\connect - kz_r_k2_dbo
\set ON_ERROR_STOP 0
CREATE TEMP TABLE k4_tmp (id bigint PRIMARY KEY, v text);
ALTER TABLE k4_tmp ENABLE ROW LEVEL SECURITY;
SELECT kizunasync.sync_table('pg_temp.k4_tmp', table_name => 'k4_items');
SELECT kzt.expect(:'SQLSTATE', '42809', 'K4: sync_table of a temporary table is refused', :'LAST_ERROR_MESSAGE');
INSERT INTO k4_tmp VALUES (1, 'temp');
\set ON_ERROR_STOP 1
-- the temporary table goes with the session
\connect - kz_r_k2_dbo
\set ON_ERROR_STOP 0
SET client_min_messages = warning;
CREATE TABLE public.k4_items (id bigint PRIMARY KEY, v text);
ALTER TABLE public.k4_items ENABLE ROW LEVEL SECURITY;
SELECT kizunasync.sync_table('public.k4_items');
SELECT kzt.expect(:'SQLSTATE', '00000', 'K4: the wire name is free for a real table afterwards', :'LAST_ERROR_MESSAGE');
RESET client_min_messages;
\set ON_ERROR_STOP 1
\connect - postgres
\set ON_ERROR_STOP 1
SELECT kzt.is(string_agg(s.table_name, ', '), NULL, 'K4: no synced_tables row outlives its table')
  FROM kizunasync.synced_tables s WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = s.relid);

-- ---------------------------------------------------------------- K7
-- (DEFECT on main 54c806d) sync_table of an UNLOGGED table: crash recovery
-- empties it without a tombstone for any row, so every device keeps rows
-- that no longer exist (and a hot standby cannot read it at all).
\connect - kz_r_k2_dbo
\set ON_ERROR_STOP 0
CREATE UNLOGGED TABLE public.k7_unlogged (id bigint PRIMARY KEY, v text);
ALTER TABLE public.k7_unlogged ENABLE ROW LEVEL SECURITY;
SELECT kizunasync.sync_table('public.k7_unlogged');
SELECT kzt.expect(:'SQLSTATE', '42809', 'K7: sync_table of an unlogged table is refused', :'LAST_ERROR_MESSAGE');
-- a synced table its owner switches to UNLOGGED afterwards: its writes are
-- refused until it is logged again (nothing commits that a crash could
-- take without a tombstone)
SET client_min_messages = warning;
CREATE TABLE public.k7_items (id bigint PRIMARY KEY, v text);
ALTER TABLE public.k7_items ENABLE ROW LEVEL SECURITY;
SELECT kizunasync.sync_table('public.k7_items');
RESET client_min_messages;
ALTER TABLE public.k7_items SET UNLOGGED;
INSERT INTO public.k7_items VALUES (1, 'unlogged');
SELECT kzt.expect(:'SQLSTATE', '55000', 'K7: a write to a synced table switched to UNLOGGED is refused', :'LAST_ERROR_MESSAGE');
SELECT kzt.is((SELECT count(*) FROM public.k7_items)::text, '0', 'K7: and nothing of it committed');
ALTER TABLE public.k7_items SET LOGGED;
INSERT INTO public.k7_items VALUES (2, 'logged again');
SELECT kzt.expect(:'SQLSTATE', '00000', 'K7: logged again, writes are captured as before', :'LAST_ERROR_MESSAGE');
\set ON_ERROR_STOP 1

-- ---------------------------------------------------------------- K5
-- Writes to a synced table from functions that REFRESH MATERIALIZED VIEW and
-- ANALYZE (an expression index) run as their owner under a
-- security-restricted operation, by a role that owns the matview and the
-- index but not the synced table: captured, as that owner.
\connect - kz_r_k2_dbo
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE TABLE public.k5_t (id bigserial PRIMARY KEY, who name, what text);
GRANT SELECT, INSERT ON public.k5_t TO kz_r_k2_plain;
GRANT USAGE ON SEQUENCE public.k5_t_id_seq TO kz_r_k2_plain;
SELECT kizunasync.sync_table('public.k5_t') AS n \gset
GRANT CREATE ON SCHEMA public TO kz_r_k2_plain;
RESET client_min_messages;
\connect - kz_r_k2_plain
\set ON_ERROR_STOP 1
CREATE FUNCTION public.k5_touch(what text, i int) RETURNS int LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	INSERT INTO public.k5_t (who, what) VALUES (current_user, what);
	RETURN i;
END $$;
-- declared IMMUTABLE so that it may index; it writes anyway (plpgsql
-- refuses INSERT only in a non-volatile function's own statements, so the
-- write goes through a VOLATILE helper)
CREATE FUNCTION public.k5_touch_imm(what text, i int) RETURNS int LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
	SELECT public.k5_touch(what, i)
$$;
CREATE MATERIALIZED VIEW public.k5_mv AS SELECT public.k5_touch('refresh', g) AS g FROM generate_series(1, 3) g WITH NO DATA;
REFRESH MATERIALIZED VIEW public.k5_mv;
CREATE TABLE public.k5_ix (i int);
INSERT INTO public.k5_ix SELECT g FROM generate_series(1, 3) g;
CREATE INDEX k5_ix_expr ON public.k5_ix ((public.k5_touch_imm('index', i)));
ANALYZE public.k5_ix;
SELECT kzt.ok(count(*) FILTER (WHERE what = 'refresh') = 3 AND count(*) FILTER (WHERE what = 'index') >= 3,
	'K5: control: the refresh and the index build wrote k5_t') FROM public.k5_t;
SELECT kzt.is(string_agg(DISTINCT who::text, ', '), 'kz_r_k2_plain', 'K5: and wrote it as the owner') FROM public.k5_t;
\connect - postgres
\set ON_ERROR_STOP 1
SELECT kzt.is(string_agg(t.id || '/' || t.what, ', '), NULL,
	'K5: writes under REFRESH and CREATE INDEX / ANALYZE (security-restricted) have their entries')
  FROM public.k5_t t
 WHERE NOT EXISTS (SELECT 1 FROM kizunasync.changelog c
					WHERE c.table_name = 'k5_t' AND c.pk = t.id::text AND c.row_xmin = t.xmin);

-- ---------------------------------------------------------------- K6
-- READ ONLY transactions (a Data API GET): the operator functions write
-- nothing (25006) although they write bookkeeping by direct heap access;
-- a pull whose page needs the user's first grant answers KZL03 and records
-- nothing; a transaction that turns READ ONLY while holding unrecorded
-- changes records them before (and otherwise the writers' section refuses
-- nextval): no row commits without its entry.
\connect - kz_r_k2_dbo
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE TABLE public.k6_t (id bigint PRIMARY KEY, owner_id uuid NOT NULL, v text);
ALTER TABLE public.k6_t ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON public.k6_t TO authenticated
	USING (owner_id::text = pg_catalog.current_setting('request.jwt.claims', true)::json ->> 'sub');
GRANT SELECT, INSERT, UPDATE, DELETE ON public.k6_t TO authenticated;
INSERT INTO public.k6_t VALUES (1, '00000000-0000-4000-8000-0000000000c6', 'a'), (2, '00000000-0000-4000-8000-0000000000c7', 'b');
SELECT kizunasync.sync_table('public.k6_t', bucket_column => 'owner_id') AS n \gset
ALTER TABLE public.k6_t DISABLE TRIGGER kizunasync_capture;
INSERT INTO public.k6_t VALUES (3, '00000000-0000-4000-8000-0000000000c6', 'uncaptured');
ALTER TABLE public.k6_t ENABLE ALWAYS TRIGGER kizunasync_capture;
CREATE TABLE public.k6_other (id bigint PRIMARY KEY);
ALTER TABLE public.k6_other ENABLE ROW LEVEL SECURITY;
RESET client_min_messages;
\set ON_ERROR_STOP 0
BEGIN READ ONLY;
SELECT kizunasync.repair_table('public.k6_t');
\set st :SQLSTATE
\set msg :LAST_ERROR_MESSAGE
ROLLBACK;
SELECT kzt.expect(:'st', '25006', 'K6: repair_table in a READ ONLY transaction is refused (25006)', :'msg');
BEGIN READ ONLY;
SELECT kizunasync.sync_table('public.k6_other');
\set st :SQLSTATE
\set msg :LAST_ERROR_MESSAGE
ROLLBACK;
SELECT kzt.expect(:'st', '25006', 'K6: sync_table in a READ ONLY transaction is refused (25006)', :'msg');
BEGIN READ ONLY;
SELECT kizunasync.unsync_table('public.k6_t');
\set st :SQLSTATE
\set msg :LAST_ERROR_MESSAGE
ROLLBACK;
SELECT kzt.expect(:'st', '25006', 'K6: unsync_table in a READ ONLY transaction is refused (25006)', :'msg');
-- unrecorded changes in a transaction that turns READ ONLY: a COPY in a
-- fresh session (its changes wait for the next statement), then SET
-- TRANSACTION READ ONLY, which records them first (a utility statement
-- starts), so the commit keeps the row and its entry
\connect - kz_r_k2_dbo
BEGIN;
COPY public.k6_t (id, owner_id, v) FROM STDIN;
4	00000000-0000-4000-8000-0000000000c6	copied then read only
\.
SET TRANSACTION READ ONLY;
COMMIT;
\set ON_ERROR_STOP 1
\connect - kz_r_k2_api
\set ON_ERROR_STOP 0
SET request.jwt.claims = '{"sub": "00000000-0000-4000-8000-0000000000c6", "role": "authenticated"}';
BEGIN READ ONLY;
SELECT kizunasync.pull(kzt.bucket('k6_t', '{"owner_id": "00000000-0000-4000-8000-0000000000c6"}'), '0', 1, 100);
\set st :SQLSTATE
\set msg :LAST_ERROR_MESSAGE
ROLLBACK;
SELECT kzt.expect(:'st', 'KZL03', 'K6: a READ ONLY pull that needs the first grant answers KZL03', :'msg');
\set ON_ERROR_STOP 1
\connect - postgres
\set ON_ERROR_STOP 1
SELECT kzt.is((SELECT count(*) FROM kizunasync.bucket_grants WHERE table_name = 'k6_t')
			  + (SELECT count(*) FROM kizunasync.changelog WHERE table_name = 'k6_t' AND pk = '3'), 0::bigint,
	'K6: the READ ONLY calls recorded no grant and no entry (the uncaptured row 3 stays unrepaired)');
SELECT kzt.is(count(*), 1::bigint, 'K6: the row copied before SET TRANSACTION READ ONLY committed with its entry')
  FROM public.k6_t t
 WHERE t.id = 4 AND EXISTS (SELECT 1 FROM kizunasync.changelog c
							 WHERE c.table_name = 'k6_t' AND c.pk = t.id::text AND c.row_xmin = t.xmin);
SELECT kzt.is((SELECT count(*) FROM kizunasync.synced_tables WHERE table_name IN ('k6_t', 'k6_other')), 1::bigint,
	'K6: and synced no table and unsynced none');
