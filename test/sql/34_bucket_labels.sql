-- Bucket labels (issue 32 part 1, decisions/0013): the label a bucket value
-- is recorded under and the pull's scope test are one relation.  A pull
-- delivers a row to a param when their renderings (to_jsonb) are equal as
-- jsonb (numbers by value, strings byte for byte); equal values must get
-- one label and unequal values different labels, or a row is stranded
-- (numeric 1 -> 1.0 moved it to a bucket no device reads) or withheld (the
-- json string "1" shared the number 1's label).  Each device below pulls
-- its buckets to has_more = false (pages of 3) and applies rows and
-- tombstones to its own store, which is printed: it must equal the table's
-- rows of those buckets.
SET client_min_messages = warning;
CREATE SCHEMA bl;
GRANT USAGE ON SCHEMA bl TO authenticated;
CREATE TABLE bl.devices (name text PRIMARY KEY, buckets jsonb NOT NULL, cursor text NOT NULL DEFAULT '0');
CREATE TABLE bl.store (device text, tbl text, pk text, row jsonb, PRIMARY KEY (device, tbl, pk));
CREATE FUNCTION bl.device(d text, b text) RETURNS void LANGUAGE sql AS $$ INSERT INTO bl.devices (name, buckets) VALUES (d, b::jsonb) $$;
-- pull to has_more = false as user u1, apply, print the store
CREATE FUNCTION bl.sync(d text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	b jsonb;
	c text;
	p jsonb;
	x jsonb;
	pages int := 0;
BEGIN
	SELECT buckets, cursor INTO b, c FROM bl.devices WHERE name = d;
	LOOP
		SET LOCAL ROLE authenticated;
		PERFORM set_config('request.jwt.claims', '{"sub": "u1", "role": "authenticated"}', true);
		p := kizunasync.pull(b, c, 1, 3);
		RESET ROLE;
		FOR x IN SELECT * FROM jsonb_array_elements(p -> 'rows') LOOP
			INSERT INTO bl.store VALUES (d, x ->> 'table', x ->> 'pk', x -> 'row')
				ON CONFLICT (device, tbl, pk) DO UPDATE SET row = EXCLUDED.row;
		END LOOP;
		FOR x IN SELECT * FROM jsonb_array_elements(p -> 'tombstones') LOOP
			DELETE FROM bl.store WHERE device = d AND tbl = x ->> 'table' AND pk = x ->> 'pk';
		END LOOP;
		c := p ->> 'cursor';
		pages := pages + 1;
		EXIT WHEN NOT (p ->> 'has_more')::boolean OR pages > 20;
	END LOOP;
	UPDATE bl.devices SET cursor = c WHERE name = d;
	RETURN format('%s: %s', d, coalesce((SELECT string_agg(format('%s/%s=%s', tbl, pk, row), ' ' ORDER BY tbl, pk)
										   FROM bl.store WHERE device = d), '(nothing)'));
END $$;
CREATE FUNCTION bl.labels(t text) RETURNS TABLE (kind text, pk text, label text) LANGUAGE sql AS $$
	SELECT 'entry', pk, bucket_value FROM kizunasync.changelog WHERE table_name = t
	UNION ALL SELECT 'tombstone', pk, bucket_value FROM kizunasync.tombstones WHERE table_name = t
	ORDER BY 1, 2, 3 $$;
-- an open table: RLS on, every row readable
CREATE FUNCTION bl.open(t regclass) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('ALTER TABLE %s ENABLE ROW LEVEL SECURITY', t);
	EXECUTE format('CREATE POLICY everyone ON %s USING (true)', t);
	EXECUTE format('GRANT SELECT ON %s TO authenticated', t);
END $$;
RESET client_min_messages;

-- 1. numeric, the issue's scenario: insert 1, bootstrap; grp = 1.0 (the same
-- number) then v = 'b': delivered; delete: the tombstone delivered; a row
-- inserted with grp = 1.00 is delivered to {"grp": 1}
CREATE TABLE bl.n (id int PRIMARY KEY, grp numeric, v text);
SELECT bl.open('bl.n');
SELECT kizunasync.sync_table('bl.n', bucket_column => 'grp', table_name => 'bl_n');
SELECT bl.device('n1', '[{"table": "bl_n", "params": {"grp": 1}}]');
INSERT INTO bl.n VALUES (1, 1, 'a');
SELECT bl.sync('n1');
UPDATE bl.n SET grp = 1.0 WHERE id = 1;
UPDATE bl.n SET v = 'b' WHERE id = 1;
SELECT bl.sync('n1');
DELETE FROM bl.n WHERE id = 1;
SELECT bl.sync('n1');
INSERT INTO bl.n VALUES (2, 1.00, 'x');
SELECT bl.sync('n1');
-- the same bucket asked for as the string "1.0", and -0 is 0
INSERT INTO bl.n VALUES (3, -0.00, 'zero'), (4, 10, 'ten'), (5, 'NaN', 'nan');
SELECT bl.device('n2', '[{"table": "bl_n", "params": {"grp": "1.0"}}, {"table": "bl_n", "params": {"grp": "-0"}}, {"table": "bl_n", "params": {"grp": "NaN"}}]');
SELECT bl.sync('n2');
-- one label per number: 1 and 1.00 are "1", -0.00 is "0", 10 keeps its zero
SELECT * FROM bl.labels('bl_n');
-- a move to a really different number still leaves the bucket
UPDATE bl.n SET grp = 1.5 WHERE id = 2;
SELECT bl.sync('n1');
SELECT bl.sync('n2');

-- 2. float8 and float4: -0 renders as 0, NaN as the string "NaN", 1e0 as 1;
-- a writer with other settings (extra_float_digits = 0) changes nothing
CREATE TABLE bl.f (id int PRIMARY KEY, g float8, v text);
SELECT bl.open('bl.f');
SELECT kizunasync.sync_table('bl.f', bucket_column => 'g', table_name => 'bl_f');
SET extra_float_digits = 0;
INSERT INTO bl.f VALUES (1, '-0', 'minus zero'), (2, 'NaN', 'nan'), (3, '1e0', 'one'),
	(4, 1/3::float8, 'third'), (5, 'Infinity', 'inf');
RESET extra_float_digits;
SELECT bl.device('f1', '[{"table": "bl_f", "params": {"g": 0}}, {"table": "bl_f", "params": {"g": "NaN"}}, {"table": "bl_f", "params": {"g": "1.0"}}]');
SELECT bl.device('f2', '[{"table": "bl_f", "params": {"g": "-0"}}, {"table": "bl_f", "params": {"g": "0.3333333333333333"}}, {"table": "bl_f", "params": {"g": "Infinity"}}]');
SELECT bl.sync('f1');
SELECT bl.sync('f2');
SELECT * FROM bl.labels('bl_f');
-- -0 rewritten as 0 renders alike (no change); 1 -> 2 leaves bucket 1
UPDATE bl.f SET g = 0 WHERE id = 1;
UPDATE bl.f SET g = 2 WHERE id = 3;
SELECT bl.sync('f1');
CREATE TABLE bl.f4 (id int PRIMARY KEY, g float4);
SELECT bl.open('bl.f4');
SELECT kizunasync.sync_table('bl.f4', bucket_column => 'g', table_name => 'bl_f4');
INSERT INTO bl.f4 VALUES (1, 0.1), (2, '-0');
SELECT bl.device('f4', '[{"table": "bl_f4", "params": {"g": "0.1"}}, {"table": "bl_f4", "params": {"g": 0}}]');
SELECT bl.sync('f4');
SELECT * FROM bl.labels('bl_f4');

-- 3. jsonb: 1 and 1.0 are one bucket, the string "1" another (labels are
-- canonical JSON text for a type whose values may be of any JSON kind)
CREATE TABLE bl.j (id int PRIMARY KEY, g jsonb);
SELECT bl.open('bl.j');
SELECT kizunasync.sync_table('bl.j', bucket_column => 'g', table_name => 'bl_j');
INSERT INTO bl.j VALUES (1, '1'), (2, '1.0'), (3, '"1"'), (4, '{"a": 1.0, "b": [2.50]}'),
	(5, 'true'), (6, '"true"'), (7, 'null');
SELECT bl.device('j_num', '[{"table": "bl_j", "params": {"g": 1}}]');
SELECT bl.device('j_str', '[{"table": "bl_j", "params": {"g": "\"1\""}}]');
SELECT bl.device('j_obj', '[{"table": "bl_j", "params": {"g": "{\"b\": [2.5], \"a\": 1}"}}]');
SELECT bl.device('j_bool', '[{"table": "bl_j", "params": {"g": true}}, {"table": "bl_j", "params": {"g": "\"true\""}}]');
SELECT bl.sync('j_num');
SELECT bl.sync('j_str');
SELECT bl.sync('j_obj');
SELECT bl.sync('j_bool');
SELECT * FROM bl.labels('bl_j');
-- the string "1" becomes the number 1: it leaves the string's bucket
UPDATE bl.j SET g = '1' WHERE id = 3;
SELECT bl.sync('j_str');
SELECT bl.sync('j_num');
-- and the number 1.0 becomes the string "1": it leaves the number's bucket
UPDATE bl.j SET g = '"1"' WHERE id = 2;
SELECT bl.sync('j_num');
SELECT bl.sync('j_str');

-- 4. text under a non-deterministic collation, and citext: 'a' and 'A' are
-- equal in SQL, but a pull compares renderings byte for byte, so they are
-- two buckets - and the label says the same
CREATE COLLATION bl.ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE bl.t (id int PRIMARY KEY, g text COLLATE bl.ci, v varchar(10) COLLATE bl.ci);
SELECT bl.open('bl.t');
SELECT kizunasync.sync_table('bl.t', bucket_column => 'g', table_name => 'bl_t');
INSERT INTO bl.t VALUES (1, 'a', 'x'), (2, 'A', 'y');
SELECT g = 'A' AS equal_in_sql FROM bl.t WHERE id = 1;
SELECT bl.device('t_lower', '[{"table": "bl_t", "params": {"g": "a"}}]');
SELECT bl.device('t_upper', '[{"table": "bl_t", "params": {"g": "A"}}]');
SELECT bl.sync('t_lower');
SELECT bl.sync('t_upper');
-- 'a' -> 'A' (equal under the collation) is a move between the two buckets
UPDATE bl.t SET g = 'A' WHERE id = 1;
SELECT bl.sync('t_lower');
SELECT bl.sync('t_upper');
SELECT * FROM bl.labels('bl_t');
CREATE EXTENSION citext SCHEMA bl;
CREATE TABLE bl.c (id int PRIMARY KEY, g bl.citext);
SELECT bl.open('bl.c');
SELECT kizunasync.sync_table('bl.c', bucket_column => 'g', table_name => 'bl_c');
INSERT INTO bl.c VALUES (1, 'Acme'), (2, 'acme');
SELECT bl.device('c_acme', '[{"table": "bl_c", "params": {"g": "acme"}}]');
SELECT bl.sync('c_acme');
UPDATE bl.c SET g = 'ACME' WHERE id = 2;
SELECT bl.sync('c_acme');
SELECT * FROM bl.labels('bl_c');

-- 5. date and time types, written under other settings than the pull's and
-- asked for in other spellings: one label per value (the rendering is made
-- under the pinned TimeZone, DateStyle, IntervalStyle)
CREATE TABLE bl.d (id int PRIMARY KEY, g date);
CREATE TABLE bl.ts (id int PRIMARY KEY, g timestamp(0));
CREATE TABLE bl.tz (id int PRIMARY KEY, g timestamptz);
CREATE TABLE bl.tm (id int PRIMARY KEY, g time);
CREATE TABLE bl.iv (id int PRIMARY KEY, g interval);
SELECT bl.open(t) FROM unnest('{bl.d,bl.ts,bl.tz,bl.tm,bl.iv}'::regclass[]) t;
SELECT kizunasync.sync_table(t, bucket_column => 'g', table_name => replace(t::text, '.', '_'))
  FROM unnest('{bl.d,bl.ts,bl.tz,bl.tm,bl.iv}'::regclass[]) t;
SET DateStyle = 'SQL, DMY';
SET TimeZone = 'Asia/Tokyo';
SET IntervalStyle = 'sql_standard';
INSERT INTO bl.d VALUES (1, '02/01/2024');
INSERT INTO bl.ts VALUES (1, '02/01/2024 03:04:05.4');
INSERT INTO bl.tz VALUES (1, '2024-01-02 09:00:00');
INSERT INTO bl.tm VALUES (1, '1:30 PM');
INSERT INTO bl.iv VALUES (1, '1 2:00:00'), (2, '24:00:00');
SET DateStyle = 'German';
SET TimeZone = 'America/New_York';
SET IntervalStyle = 'iso_8601';
SELECT bl.device('dt', '[{"table": "bl_d", "params": {"g": "2024-01-02"}},
	{"table": "bl_ts", "params": {"g": "2024-01-02T03:04:05"}},
	{"table": "bl_tz", "params": {"g": "2024-01-01 19:00:00-05"}},
	{"table": "bl_tm", "params": {"g": "13:30:00"}},
	{"table": "bl_iv", "params": {"g": "P1DT2H"}}]');
-- 24:00:00 is equal to 1 day in SQL but renders differently: its own bucket
SELECT bl.device('dt_day', '[{"table": "bl_iv", "params": {"g": "1 day"}}, {"table": "bl_iv", "params": {"g": "PT24H"}}]');
SELECT bl.sync('dt');
SELECT bl.sync('dt_day');
RESET DateStyle;
RESET TimeZone;
RESET IntervalStyle;
SELECT t, l.* FROM unnest('{bl_d,bl_ts,bl_tz,bl_tm,bl_iv}'::text[]) t, bl.labels(t) l;
-- a move under the writer's settings leaves the bucket
SET TimeZone = 'Asia/Tokyo';
UPDATE bl.tz SET g = '2024-01-02 10:00:00' WHERE id = 1;
RESET TimeZone;
SELECT bl.sync('dt');

-- 6. domains over them: the base type's labels; the domain's CHECK is not
-- part of the label (it runs where the value is written or a param is cast)
CREATE DOMAIN bl.amount AS numeric CHECK (VALUE >= 0);
CREATE DOMAIN bl.doc AS jsonb CHECK (VALUE IS NOT NULL);
CREATE DOMAIN bl.day AS timestamptz;
CREATE TABLE bl.dn (id int PRIMARY KEY, g bl.amount);
CREATE TABLE bl.dj (id int PRIMARY KEY, g bl.doc);
CREATE TABLE bl.dd (id int PRIMARY KEY, g bl.day);
SELECT bl.open(t) FROM unnest('{bl.dn,bl.dj,bl.dd}'::regclass[]) t;
SELECT kizunasync.sync_table(t, bucket_column => 'g', table_name => replace(t::text, '.', '_'))
  FROM unnest('{bl.dn,bl.dj,bl.dd}'::regclass[]) t;
INSERT INTO bl.dn VALUES (1, 1), (2, 2.5);
INSERT INTO bl.dj VALUES (1, '2.0'), (2, '"2"');
INSERT INTO bl.dd VALUES (1, '2024-01-02 00:00:00+00');
SELECT bl.device('dom', '[{"table": "bl_dn", "params": {"g": 1}}, {"table": "bl_dn", "params": {"g": "2.50"}},
	{"table": "bl_dj", "params": {"g": 2}}, {"table": "bl_dd", "params": {"g": "2024-01-02 01:00:00+01"}}]');
SELECT bl.sync('dom');
UPDATE bl.dn SET g = 1.0 WHERE id = 1;
UPDATE bl.dj SET g = '2' WHERE id = 1;
SELECT bl.sync('dom');
SELECT t, l.* FROM unnest('{bl_dn,bl_dj,bl_dd}'::text[]) t, bl.labels(t) l;
-- a param the domain refuses is the domain's error
SELECT bl.device('dom_bad', '[{"table": "bl_dn", "params": {"g": -1}}]');
SELECT bl.sync('dom_bad');

-- 7. repair_table gives back the bucket value of an entry whose row is gone
-- from its label alone (a numeric, a jsonb string, an array): the tombstone
-- carries it and reaches the device
CREATE TABLE bl.a (id int PRIMARY KEY, g int[]);
SELECT bl.open('bl.a');
SELECT kizunasync.sync_table('bl.a', bucket_column => 'g', table_name => 'bl_a');
INSERT INTO bl.a VALUES (1, '{1,2}');
SELECT bl.device('rep', '[{"table": "bl_a", "params": {"g": "{1,2}"}}, {"table": "bl_n", "params": {"grp": 10}}, {"table": "bl_j", "params": {"g": "\"true\""}}]');
SELECT bl.sync('rep');
ALTER TABLE bl.a DISABLE TRIGGER kizunasync_capture;
ALTER TABLE bl.n DISABLE TRIGGER kizunasync_capture;
ALTER TABLE bl.j DISABLE TRIGGER kizunasync_capture;
DELETE FROM bl.a;
DELETE FROM bl.n WHERE id = 4;
DELETE FROM bl.j WHERE id = 6;
SET client_min_messages = error;
SELECT kizunasync.repair_table(t) FROM unnest('{bl.a,bl.n,bl.j}'::regclass[]) t;
RESET client_min_messages;
SELECT table_name, pk, bucket_value, bucket_snapshot FROM kizunasync.tombstones
 WHERE (table_name, pk) IN (('bl_a', '1'), ('bl_n', '4'), ('bl_j', '6')) ORDER BY 1, 2;
SELECT bl.sync('rep');

-- 8. types whose rendering depends on more than the value and the pinned
-- settings are refused as bucket columns (0A000), a domain or an array of
-- them too; other columns of such types are fine
CREATE TABLE bl.m (id int PRIMARY KEY, g money, r regclass, ma money[], k text);
CREATE DOMAIN bl.cash AS money;
CREATE TYPE bl.priced AS (label text, price money);
CREATE TABLE bl.m2 (id int PRIMARY KEY, dc bl.cash, p bl.priced);
ALTER TABLE bl.m ENABLE ROW LEVEL SECURITY;
ALTER TABLE bl.m2 ENABLE ROW LEVEL SECURITY;
SELECT kizunasync.sync_table('bl.m', bucket_column => 'g');
\echo :LAST_ERROR_SQLSTATE
SELECT kizunasync.sync_table('bl.m', bucket_column => 'r');
SELECT kizunasync.sync_table('bl.m', bucket_column => 'ma');
SELECT kizunasync.sync_table('bl.m2', bucket_column => 'dc');
SELECT kizunasync.sync_table('bl.m2', bucket_column => 'p');
SELECT count(*) AS synced FROM kizunasync.synced_tables WHERE relid IN ('bl.m'::regclass, 'bl.m2'::regclass);
SELECT kizunasync.sync_table('bl.m', bucket_column => 'k', table_name => 'bl_m');
-- a synced table whose bucket column became money keeps syncing; keeping
-- that bucket column (options only) warns, choosing it anew is refused
ALTER TABLE bl.m DROP COLUMN g;
ALTER TABLE bl.m ALTER COLUMN k TYPE money USING 0;
SELECT kizunasync.sync_table('bl.m', bucket_column => 'k', table_name => 'bl_m', tombstone_ttl_days => 7);
SELECT tombstone_ttl_days FROM kizunasync.synced_tables WHERE table_name = 'bl_m';
SELECT kizunasync.unsync_table('bl.m');
SELECT kizunasync.sync_table('bl.m', bucket_column => 'k', table_name => 'bl_m');

-- bucket numbers are SipHash-2-4 of the label with the table's random key
-- (decisions/0092, "Bucket numbers"): the reference test vector (key
-- 00..0f, message 00..0e) is a129ca6149be45e5
SELECT to_hex(kizunasync_test.siphash('\x000102030405060708090a0b0c0d0e0f',
									  '\x000102030405060708090a0b0c0d0e')) AS siphash_vector;
CREATE TABLE bl.k1 (id int PRIMARY KEY, g text);
CREATE TABLE bl.k2 (id int PRIMARY KEY, g text);
ALTER TABLE bl.k1 ENABLE ROW LEVEL SECURITY;
ALTER TABLE bl.k2 ENABLE ROW LEVEL SECURITY;
SELECT kizunasync.sync_table('bl.k1', bucket_column => 'g', table_name => 'bl_k1') IS NOT NULL AS synced;
SELECT kizunasync.sync_table('bl.k2', bucket_column => 'g', table_name => 'bl_k2') IS NOT NULL AS synced;
SELECT count(DISTINCT bucket_key) AS keys, min(length(bucket_key)) AS key_bytes,
	   count(DISTINCT kizunasync_test.bucket_number(id, 'team-1')) AS numbers_of_one_label,
	   bool_and(kizunasync_test.bucket_number(id, 'team-1')
				= kizunasync_test.siphash(bucket_key, convert_to('team-1', 'UTF8')) & 9223372036854775807)
		 AS keyed_siphash
  FROM kizunasync.synced_tables WHERE table_name IN ('bl_k1', 'bl_k2');

-- nothing of this file is left behind
SET client_min_messages = warning;
DROP SCHEMA bl CASCADE;
RESET client_min_messages;
SELECT count(*) AS left_behind FROM kizunasync.synced_tables WHERE table_name LIKE 'bl\_%';
SELECT (SELECT count(*) FROM kizunasync.changelog WHERE table_name LIKE 'bl\_%')
     + (SELECT count(*) FROM kizunasync.tombstones WHERE table_name LIKE 'bl\_%')
     + (SELECT count(*) FROM kizunasync.bucket_grants WHERE table_name LIKE 'bl\_%') AS bookkeeping_left;
