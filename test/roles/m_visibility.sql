-- M. What a device holds follows what its user may see (issue 32 part 2).
-- db: kz_roles_vis
-- owner: kz_r_v_owner
-- plan: 34
--
-- The issue's table: docs(id, org, project, ...), bucket column org, a
-- policy that lets members of a row's project read it (members is not
-- synced: the common Supabase pattern) and hides private rows from all but
-- their owner_id.  kz_r_v_owner (LOGIN NOSUPERUSER) owns the database and
-- the tables, as Supabase's postgres does.  alice and bob are ordinary
-- LOGIN roles, members of authenticated, each with its own JWT sub, each
-- in its own session; a "device" is kept by kzv.sync (pull pages of 2
-- until has_more is false, rows and tombstones applied in seq order, the
-- cursor kept), and each check compares it with what the same session may
-- SELECT.
--
-- Without a write to the row (decisions/0093): a membership change is
-- reconciled by kizunasync.resync_bucket, which the owner's SECURITY
-- DEFINER trigger on members calls (alice's own INSERT into members fires
-- it; alice herself may not call resync_bucket); a revoked column privilege
-- by the owner calling it.  With a write (decisions/0024, "Visibility"): a
-- row the caller held (it holds the bucket's grant) and may no longer see
-- reaches it as a tombstone, by itself.  Before the fix (d5d3e61) every
-- check marked [fix] failed: resync_bucket did not exist, and a hidden
-- change was withheld with no tombstone.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE ROLE kz_r_v_alice LOGIN NOSUPERUSER;
CREATE ROLE kz_r_v_bob LOGIN NOSUPERUSER;
GRANT authenticated TO kz_r_v_alice, kz_r_v_bob;
GRANT USAGE ON SCHEMA auth TO kz_r_v_owner;	-- as Supabase's postgres has it
-- a synced table of another role (resync_bucket is for the table's owner)
CREATE TABLE public.other (id bigint PRIMARY KEY, org int);
SELECT kizunasync.sync_table('public.other', bucket_column => 'org') AS n \gset
-- the devices: rows by (device, pk), a cursor and bucket list per device
CREATE SCHEMA kzv;
GRANT USAGE ON SCHEMA kzv TO PUBLIC;
CREATE TABLE kzv.dev (device text, pk text, row jsonb NOT NULL, PRIMARY KEY (device, pk));
CREATE TABLE kzv.cur (device text PRIMARY KEY, buckets jsonb NOT NULL, cursor text NOT NULL DEFAULT '0');
GRANT SELECT, INSERT, UPDATE, DELETE ON kzv.dev, kzv.cur TO PUBLIC;
-- what the device holds, as "id:v" in key order
CREATE FUNCTION kzv.holds(p_device text) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
	SELECT coalesce(string_agg(pk || ':' || coalesce(row ->> 'v', '-'), ',' ORDER BY pk), '')
	  FROM kzv.dev WHERE device = p_device
$$;
-- the keys of the device's rows that carry the column secret
CREATE FUNCTION kzv.secrets(p_device text) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
	SELECT coalesce(string_agg(pk, ',' ORDER BY pk), '') FROM kzv.dev WHERE device = p_device AND row ? 'secret'
$$;
-- pull the device's buckets to has_more false, as the session's role
CREATE FUNCTION kzv.sync(p_device text, lim int DEFAULT 2) RETURNS text
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	c kzv.cur;
	page jsonb;
	e record;
	pages int := 0;
BEGIN
	SELECT * INTO STRICT c FROM kzv.cur WHERE device = p_device;
	LOOP
		page := kizunasync.pull(c.buckets, c.cursor, 1, lim);
		IF page -> 'signal' <> 'null'::jsonb THEN
			RAISE EXCEPTION 'signal %', page -> 'signal';
		END IF;
		FOR e IN SELECT (x ->> 'seq')::numeric AS seq, x ->> 'pk' AS pk, x -> 'row' AS row
				   FROM jsonb_array_elements(page -> 'rows') x
				 UNION ALL
				 SELECT (x ->> 'seq')::numeric, x ->> 'pk', NULL
				   FROM jsonb_array_elements(page -> 'tombstones') x
				 ORDER BY 1
		LOOP
			IF e.row IS NULL THEN
				DELETE FROM kzv.dev WHERE device = p_device AND pk = e.pk;
			ELSE
				INSERT INTO kzv.dev VALUES (p_device, e.pk, e.row)
				ON CONFLICT (device, pk) DO UPDATE SET row = EXCLUDED.row;
			END IF;
		END LOOP;
		c.cursor := page ->> 'cursor';
		EXIT WHEN NOT (page ->> 'has_more')::boolean;
		pages := pages + 1;
		IF pages > 1000 THEN
			RAISE EXCEPTION 'device % never drained', p_device;
		END IF;
	END LOOP;
	UPDATE kzv.cur SET cursor = c.cursor WHERE device = p_device;
	RETURN kzv.holds(p_device);
END $$;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA kzv TO PUBLIC;
RESET client_min_messages;

-- ------------------------------------------------------------ the owner
\connect - kz_r_v_owner
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE TABLE public.members (project int, user_id uuid, PRIMARY KEY (project, user_id));
CREATE TABLE public.docs (id int PRIMARY KEY, org int NOT NULL, project int NOT NULL,
	status text NOT NULL DEFAULT 'open', private boolean NOT NULL DEFAULT false, owner_id uuid, v text, secret text);
ALTER TABLE public.docs ENABLE ROW LEVEL SECURITY;
CREATE POLICY member_reads ON public.docs FOR SELECT TO authenticated
	USING (EXISTS (SELECT 1 FROM public.members m WHERE m.project = docs.project AND m.user_id = auth.uid())
		   AND (NOT private OR owner_id = auth.uid()));
GRANT SELECT ON public.docs TO authenticated;
-- members: readable by the policy; alice manages memberships (an app user)
GRANT SELECT ON public.members TO authenticated;
GRANT INSERT, DELETE ON public.members TO kz_r_v_alice;
SELECT kizunasync.sync_table('public.docs', bucket_column => 'org') AS n \gset
INSERT INTO public.members VALUES (10, kzt.uid('a1')), (11, kzt.uid('a1')), (12, kzt.uid('a1')), (11, kzt.uid('b1'));
-- the remedy, documented pattern: a SECURITY DEFINER trigger function owned
-- by the synced table's owner writes again the buckets of the rows whose
-- visibility the membership change decides
CREATE FUNCTION public.members_resync() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
BEGIN
	PERFORM kizunasync.resync_bucket('public.docs', jsonb_build_object('org', d.org))
	   FROM (SELECT DISTINCT org FROM public.docs
			  WHERE project IN (CASE WHEN TG_OP <> 'INSERT' THEN OLD.project END,
								CASE WHEN TG_OP <> 'DELETE' THEN NEW.project END)) d;
	RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION public.members_resync() FROM PUBLIC;
CREATE TRIGGER members_resync AFTER INSERT OR UPDATE OR DELETE ON public.members
	FOR EACH ROW EXECUTE FUNCTION public.members_resync();
INSERT INTO public.docs (id, org, project, owner_id, v, secret) VALUES
	(1, 1, 10, kzt.uid('a1'), 'one', 's1'),
	(2, 1, 11, kzt.uid('b1'), 'two', 's2'),
	(3, 1, 10, kzt.uid('a1'), 'three', 's3'),
	(4, 1, 12, kzt.uid('a1'), 'four', 's4'),
	(5, 1, 11, kzt.uid('a1'), 'five', 's5');
RESET client_min_messages;
\connect - postgres
INSERT INTO kzv.cur (device, buckets) VALUES
	('A', kzt.bucket('docs', '{"org": 1}')),
	('A2', kzt.bucket('docs', '{"org": 1, "status": "open"}')),
	('B', kzt.bucket('docs', '{"org": 1}'));
-- what a session may SELECT, in the devices' form
CREATE FUNCTION kzv.may_see(p_status text DEFAULT NULL) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
	SELECT coalesce(string_agg(id || ':' || coalesce(v, '-'), ',' ORDER BY id::text), '')
	  FROM public.docs WHERE org = 1 AND (p_status IS NULL OR status = p_status)
$$;
GRANT EXECUTE ON FUNCTION kzv.may_see(text) TO PUBLIC;

-- ------------------------------------------------------------ bootstrap
\connect - kz_r_v_alice
\set ON_ERROR_STOP 1
SELECT set_config('request.jwt.claims', kzt.claims('a1'), false) IS NOT NULL AS claims \gset
SELECT kzt.is(kzv.sync('A'), '1:one,2:two,3:three,4:four,5:five', 'M alice: device A holds org 1''s rows of her projects');
SELECT kzt.is(kzv.holds('A'), kzv.may_see(), 'M alice: device A holds what she may SELECT');
SELECT kzt.is(kzv.sync('A2'), kzv.may_see('open'), 'M alice: device A2 ({"org": 1, "status": "open"}) holds what she may SELECT of it');
\connect - kz_r_v_bob
\set ON_ERROR_STOP 1
SELECT set_config('request.jwt.claims', kzt.claims('b1'), false) IS NOT NULL AS claims \gset
SELECT kzt.is(kzv.sync('B'), '2:two,5:five', 'M bob: device B holds the rows of project 11');

-- ---------------------- bob added to project 12, no remedy: the limit
\connect - kz_r_v_owner
\set ON_ERROR_STOP 1
ALTER TABLE public.members DISABLE TRIGGER members_resync;
INSERT INTO public.members VALUES (12, kzt.uid('b1'));
ALTER TABLE public.members ENABLE TRIGGER members_resync;
\connect - kz_r_v_bob
\set ON_ERROR_STOP 1
SELECT set_config('request.jwt.claims', kzt.claims('b1'), false) IS NOT NULL AS claims \gset
SELECT kzt.is(kzv.sync('B') || ' / may see ' || kzv.may_see(), '2:two,5:five / may see 2:two,4:four,5:five',
	'M bob: without a write or the remedy, his device does not get row 4 he may now see (documented)');

-- --------- alice adds bob to project 10: her INSERT fires the owner's trigger
\connect - kz_r_v_alice
\set ON_ERROR_STOP 0
SELECT set_config('request.jwt.claims', kzt.claims('a1'), false) IS NOT NULL AS claims \gset
INSERT INTO public.members VALUES (10, kzt.uid('b1'));
SELECT kzt.expect_rows(:'SQLSTATE', :ROW_COUNT, '00000', 'M alice: adds bob to project 10 (the owner''s trigger calls resync_bucket) [fix]', :'LAST_ERROR_MESSAGE');
-- alice herself may not call it
SELECT kizunasync.resync_bucket('public.docs', '{"org": 1}');
SELECT kzt.expect(:'SQLSTATE', '42501', 'M alice: may not call resync_bucket herself [fix]');
\set ON_ERROR_STOP 1
\connect - kz_r_v_bob
\set ON_ERROR_STOP 1
SELECT set_config('request.jwt.claims', kzt.claims('b1'), false) IS NOT NULL AS claims \gset
SELECT kzt.is(kzv.sync('B'), '1:one,2:two,3:three,4:four,5:five', 'M bob: after the remedy, device B gets rows 1, 3 (and 4) [fix]');
SELECT kzt.is(kzv.holds('B'), kzv.may_see(), 'M bob: device B holds what he may SELECT [fix]');
\connect - kz_r_v_alice
\set ON_ERROR_STOP 1
SELECT set_config('request.jwt.claims', kzt.claims('a1'), false) IS NOT NULL AS claims \gset
SELECT kzt.is(kzv.sync('A'), kzv.may_see(), 'M alice: device A, given the bucket''s rows again, holds what she may SELECT');

-- ---------- alice removed from project 10 and row 1 updated, no remedy
\connect - kz_r_v_owner
\set ON_ERROR_STOP 1
ALTER TABLE public.members DISABLE TRIGGER members_resync;
DELETE FROM public.members WHERE project = 10 AND user_id = kzt.uid('a1');
ALTER TABLE public.members ENABLE TRIGGER members_resync;
UPDATE public.docs SET v = 'one v2' WHERE id = 1;
\connect - kz_r_v_alice
\set ON_ERROR_STOP 1
SELECT set_config('request.jwt.claims', kzt.claims('a1'), false) IS NOT NULL AS claims \gset
SELECT kzv.sync('A') AS a \gset
SELECT kzt.ok(:'a' NOT LIKE '%1:%', 'M alice: row 1, written after she lost sight of it, reaches device A as a tombstone [fix]',
	'device A holds ' || :'a');
SELECT kzt.is(:'a' || ' / may see ' || kzv.may_see(), '2:two,3:three,4:four,5:five / may see 2:two,4:four,5:five',
	'M alice: without a write or the remedy, device A keeps row 3 she may no longer see (documented)');
-- the owner applies the remedy by hand
\connect - kz_r_v_owner
\set ON_ERROR_STOP 0
\set n ''
SELECT kizunasync.resync_bucket('public.docs', '{"org": 1}') AS n \gset
SELECT kzt.is(nullif(:'n', ''), '5', 'M owner: resync_bucket(docs, {"org": 1}) writes the bucket''s 5 entries again [fix]');
\set ON_ERROR_STOP 1
\connect - kz_r_v_alice
\set ON_ERROR_STOP 1
SELECT set_config('request.jwt.claims', kzt.claims('a1'), false) IS NOT NULL AS claims \gset
SELECT kzt.is(kzv.sync('A'), kzv.may_see(), 'M alice: after the remedy, device A holds what she may SELECT (row 3 gone) [fix]');

-- --------- alice removes herself from project 12: her DELETE fires the trigger
\set ON_ERROR_STOP 0
DELETE FROM public.members WHERE project = 12 AND user_id = kzt.uid('a1');
SELECT kzt.expect_rows(:'SQLSTATE', :ROW_COUNT, '00000', 'M alice: leaves project 12 (the trigger calls resync_bucket) [fix]', :'LAST_ERROR_MESSAGE');
\set ON_ERROR_STOP 1
SELECT kzt.is(kzv.sync('A') || ' / may see ' || kzv.may_see(), '2:two,5:five / may see 2:two,5:five',
	'M alice: device A no longer holds row 4 [fix]');

-- -------------------------- a policy column flipped on the row: a write
\connect - kz_r_v_owner
\set ON_ERROR_STOP 1
UPDATE public.docs SET private = true WHERE id = 5;
\connect - kz_r_v_bob
\set ON_ERROR_STOP 1
SELECT set_config('request.jwt.claims', kzt.claims('b1'), false) IS NOT NULL AS claims \gset
SELECT kzt.is(kzv.sync('B') || ' / may see ' || kzv.may_see(), '1:one v2,2:two,3:three,4:four / may see 1:one v2,2:two,3:three,4:four',
	'M bob: row 5 made private (alice''s) reaches device B as a tombstone [fix]');
\connect - kz_r_v_alice
\set ON_ERROR_STOP 1
SELECT set_config('request.jwt.claims', kzt.claims('a1'), false) IS NOT NULL AS claims \gset
SELECT kzt.is(kzv.sync('A'), kzv.may_see(), 'M alice: device A keeps her private row 5');
\connect - kz_r_v_owner
\set ON_ERROR_STOP 1
UPDATE public.docs SET owner_id = kzt.uid('b1') WHERE id = 5;
\connect - kz_r_v_alice
\set ON_ERROR_STOP 1
SELECT set_config('request.jwt.claims', kzt.claims('a1'), false) IS NOT NULL AS claims \gset
SELECT kzt.is(kzv.sync('A') || ' / may see ' || kzv.may_see(), '2:two / may see 2:two',
	'M alice: private row 5 reassigned to bob reaches device A as a tombstone [fix]');
\connect - kz_r_v_bob
\set ON_ERROR_STOP 1
SELECT set_config('request.jwt.claims', kzt.claims('b1'), false) IS NOT NULL AS claims \gset
SELECT kzt.is(kzv.sync('B'), kzv.may_see(), 'M bob: device B gets row 5, now his');

-- ----------------------- a param that is not the bucket stops matching
\connect - kz_r_v_owner
\set ON_ERROR_STOP 1
UPDATE public.docs SET status = 'closed' WHERE id = 2;
\connect - kz_r_v_alice
\set ON_ERROR_STOP 1
SELECT set_config('request.jwt.claims', kzt.claims('a1'), false) IS NOT NULL AS claims \gset
SELECT kzt.is(kzv.sync('A2') || ' / may see ' || kzv.may_see('open'), ' / may see ',
	'M alice: row 2, closed, reaches device A2 ({"status": "open"}) as a tombstone [fix]');
SELECT kzt.is(kzv.sync('A'), kzv.may_see(), 'M alice: device A ({"org": 1}) keeps row 2');

-- --------------------------------------- a revoked column privilege
\connect - kz_r_v_owner
\set ON_ERROR_STOP 1
REVOKE SELECT ON public.docs FROM authenticated;
GRANT SELECT (id, org, project, status, private, owner_id, v) ON public.docs TO authenticated;
\connect - kz_r_v_bob
\set ON_ERROR_STOP 1
SELECT set_config('request.jwt.claims', kzt.claims('b1'), false) IS NOT NULL AS claims \gset
SELECT kzv.sync('B') AS b \gset
SELECT kzt.is(kzv.secrets('B'), '1,3,4,5',
	'M bob: without a write or the remedy, device B keeps the revoked column''s values (documented; row 2, written since, came without it)');
\connect - kz_r_v_owner
\set ON_ERROR_STOP 0
\set n ''
SELECT sum(kizunasync.resync_bucket('public.docs', jsonb_build_object('org', org))) AS n
  FROM (SELECT DISTINCT org FROM public.docs) o \gset
SELECT kzt.is(nullif(:'n', ''), '5', 'M owner: resync_bucket of every bucket of docs writes its 5 entries again [fix]');
\set ON_ERROR_STOP 1
\connect - kz_r_v_bob
\set ON_ERROR_STOP 1
SELECT set_config('request.jwt.claims', kzt.claims('b1'), false) IS NOT NULL AS claims \gset
SELECT kzv.sync('B') AS b \gset
SELECT kzt.is(kzv.secrets('B'), '', 'M bob: after the remedy, device B no longer holds the revoked column [fix]');
SELECT kzt.is(kzv.holds('B'), kzv.may_see(), 'M bob: device B holds what he may SELECT [fix]');

-- ---- a membership table written through push: a deferred trigger
-- (entry points do not nest, so resync_bucket cannot run inside the push;
-- a constraint trigger DEFERRABLE INITIALLY DEFERRED runs it at the commit)
\connect - kz_r_v_owner
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE TABLE public.pmembers (id uuid PRIMARY KEY, project int NOT NULL, user_id uuid NOT NULL);
ALTER TABLE public.pmembers ENABLE ROW LEVEL SECURITY;
CREATE POLICY anyone ON public.pmembers TO authenticated USING (true) WITH CHECK (true);
GRANT SELECT, INSERT, UPDATE ON public.pmembers TO authenticated;
SELECT kizunasync.sync_table('public.pmembers') AS n \gset
CREATE POLICY pmember_reads ON public.docs FOR SELECT TO authenticated
	USING (EXISTS (SELECT 1 FROM public.pmembers m WHERE m.project = docs.project AND m.user_id = auth.uid())
		   AND (NOT private OR owner_id = auth.uid()));
CREATE FUNCTION public.pmembers_resync() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
BEGIN
	PERFORM kizunasync.resync_bucket('public.docs', jsonb_build_object('org', d.org))
	   FROM (SELECT DISTINCT org FROM public.docs WHERE project = NEW.project) d;
	RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION public.pmembers_resync() FROM PUBLIC;
CREATE CONSTRAINT TRIGGER pmembers_resync AFTER INSERT ON public.pmembers
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION public.pmembers_resync();
INSERT INTO public.docs (id, org, project, owner_id, v, secret) VALUES (6, 1, 13, kzt.uid('a1'), 'six', 's6');
RESET client_min_messages;
\connect - kz_r_v_alice
\set ON_ERROR_STOP 0
SELECT set_config('request.jwt.claims', kzt.claims('a1'), false) IS NOT NULL AS claims \gset
SELECT kzt.is(kizunasync.push(kzt.m('pmembers', kzt.uid('c1')::text, 'insert',
		jsonb_build_object('columns', jsonb_build_object('project', 13, 'user_id', kzt.uid('b1'))), 'e1'), NULL, 1) #>> '{verdicts,0,verdict}',
	'applied', 'M alice: pushes bob''s membership of project 13 (a deferred trigger calls resync_bucket at the commit) [fix]');
\set ON_ERROR_STOP 1
\connect - kz_r_v_bob
\set ON_ERROR_STOP 1
SELECT set_config('request.jwt.claims', kzt.claims('b1'), false) IS NOT NULL AS claims \gset
SELECT kzt.is(kzv.sync('B') || ' / may see ' || kzv.may_see(), '1:one v2,2:two,3:three,4:four,5:five,6:six / may see 1:one v2,2:two,3:three,4:four,5:five,6:six',
	'M bob: device B gets row 6 of project 13 [fix]');

-- ------------------------------------------- who may call it, and how
\connect - kz_r_v_owner
\set ON_ERROR_STOP 0
SELECT kizunasync.resync_bucket('public.other', '{"org": 1}');
SELECT kzt.expect(:'SQLSTATE', '42501', 'M owner: resync_bucket of a synced table another role owns is refused [fix]');
SELECT kizunasync.resync_bucket('public.members', '{}');
SELECT kzt.expect(:'SQLSTATE', '55000', 'M owner: resync_bucket of a table that is not synced is refused [fix]');
SELECT kizunasync.resync_bucket('public.docs', '{"org": 1, "status": "open"}');
SELECT kzt.expect(:'SQLSTATE', '22023', 'M owner: a bucket naming another column than the bucket column is refused [fix]');
SELECT kizunasync.resync_bucket('public.docs', '[1]');
SELECT kzt.expect(:'SQLSTATE', '22023', 'M owner: a bucket that is not an object is refused [fix]');
\set n ''
SELECT kizunasync.resync_bucket('public.docs', '{"org": null}') AS n \gset
SELECT kzt.is(nullif(:'n', ''), '0', 'M owner: a null bucket value names no bucket: nothing written [fix]');
BEGIN READ ONLY;
SELECT kizunasync.resync_bucket('public.docs', '{"org": 1}');
\set st :SQLSTATE
ROLLBACK;
SELECT kzt.expect(:'st', '25006', 'M owner: resync_bucket in a read-only transaction is refused [fix]');
\set ON_ERROR_STOP 1
\connect - postgres
