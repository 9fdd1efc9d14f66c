--
-- Cursor token codec: edge cases beyond the shared vectors (which the
-- vectors lane checks): NULL, 64-bit bounds, the hole and length limits,
-- encode errors, and the wording of the errors.
--
-- the forms of the grammar
SELECT t AS token, p.start, p.high_water, p.holes,
       kizunasync.cursor_encode(p.start, p.high_water, p.holes) = t AS round_trip
  FROM unnest(ARRAY['0', '42', '6~5', '0:0', '12:3', '4:9~5.7',
                    '100:10~1.9']) AS t,
       LATERAL kizunasync.cursor_parse(t) AS p;
-- NULL raises, with the SQLSTATE of every cursor error
SELECT * FROM kizunasync.cursor_parse(NULL);
\echo :LAST_ERROR_SQLSTATE
-- 2^63-1 is accepted as start, high-water and hole
SELECT * FROM kizunasync.cursor_parse('9223372036854775807');
SELECT * FROM kizunasync.cursor_parse('9223372036854775807:9223372036854775807~9223372036854775806');
-- 2^63 (and beyond) is rejected wherever it appears
SELECT * FROM kizunasync.cursor_parse('9223372036854775808');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM kizunasync.cursor_parse('9223372036854775808:1');
SELECT * FROM kizunasync.cursor_parse('1:9223372036854775808');
SELECT * FROM kizunasync.cursor_parse('9223372036854775807~9223372036854775808');
SELECT * FROM kizunasync.cursor_parse('99999999999999999999999999999');
-- errors name the offending part
SELECT * FROM kizunasync.cursor_parse('04:6');
SELECT * FROM kizunasync.cursor_parse('4:06');
SELECT * FROM kizunasync.cursor_parse('9~05');
SELECT * FROM kizunasync.cursor_parse('9~0');
SELECT * FROM kizunasync.cursor_parse('9~5.5');
SELECT * FROM kizunasync.cursor_parse('9~7.5');
SELECT * FROM kizunasync.cursor_parse('9~9');
SELECT * FROM kizunasync.cursor_parse('0~1');
SELECT * FROM kizunasync.cursor_parse('1::2');
SELECT * FROM kizunasync.cursor_parse('a:1');
SELECT * FROM kizunasync.cursor_parse('9.5');
SELECT * FROM kizunasync.cursor_parse('9~5:3');
SELECT * FROM kizunasync.cursor_parse('9~5~6');
SELECT * FROM kizunasync.cursor_parse('-1');
SELECT * FROM kizunasync.cursor_parse(E'6\t');
-- bytes outside printable ASCII are escaped in the message
SELECT * FROM kizunasync.cursor_parse(E'6~5\n"\\' || U&'\00e9');
-- the hole limit: 512 holes are accepted and round-trip, 513 are not
SELECT p.start, p.high_water, cardinality(p.holes) AS nholes,
       kizunasync.cursor_encode(p.start, p.high_water, p.holes) = t AS round_trip
  FROM (SELECT '7:1000~' || string_agg(i::text, '.' ORDER BY i) AS t
          FROM generate_series(1, 512) AS i) AS s,
       LATERAL kizunasync.cursor_parse(t) AS p;
SELECT * FROM kizunasync.cursor_parse(
  (SELECT '1000~' || string_agg(i::text, '.' ORDER BY i) FROM generate_series(1, 513) AS i));
-- the length limit: the longest valid token (19-digit start, high-water and
-- 512 holes) is exactly 10279 bytes and round-trips
CREATE TEMP TABLE longest AS
SELECT '9223372036854775807:9223372036854775807~' ||
       string_agg((9223372036854775807 - i)::text, '.' ORDER BY i DESC) AS t
  FROM generate_series(1, 512) AS i;
SELECT octet_length(t) AS bytes, cardinality(p.holes) AS nholes, p.holes[1] AS first_hole,
       kizunasync.cursor_encode(p.start, p.high_water, p.holes) = t AS round_trip
  FROM longest, LATERAL kizunasync.cursor_parse(t) AS p;
-- one byte more is refused on its length alone, the message shows a prefix
SELECT * FROM kizunasync.cursor_parse((SELECT t || '0' FROM longest));
SELECT * FROM kizunasync.cursor_parse(repeat('1', 10280));
-- a huge stored (compressed, toasted) token is refused on its raw size
CREATE TEMP TABLE huge (t text);
INSERT INTO huge VALUES (repeat('12345678', 1000000));
SELECT pg_column_size(t) < octet_length(t) AS compressed FROM huge;
SELECT * FROM kizunasync.cursor_parse((SELECT t FROM huge));
DROP TABLE longest, huge;
-- encode: checkpoint, continuation, holes given in any order, default holes
SELECT kizunasync.cursor_encode(NULL, 0) AS bootstrap,
       kizunasync.cursor_encode(NULL, 9, '{7,5}') AS sorted_holes,
       kizunasync.cursor_encode(12, 3) AS start_above,
       kizunasync.cursor_encode(0, 0, '{}') AS zero_zero,
       kizunasync.cursor_encode(9223372036854775807, 9223372036854775807,
                                '{9223372036854775806}') AS extremes;
-- encode refuses what the grammar cannot express
SELECT kizunasync.cursor_encode(-1, 9);
\echo :LAST_ERROR_SQLSTATE
SELECT kizunasync.cursor_encode(NULL, -9);
SELECT kizunasync.cursor_encode(NULL, 9, '{0}');
SELECT kizunasync.cursor_encode(NULL, 9, '{-3,5}');
SELECT kizunasync.cursor_encode(NULL, 9, '{5,9}');
SELECT kizunasync.cursor_encode(NULL, 0, '{1}');
SELECT kizunasync.cursor_encode(NULL, 9, '{5,7,5}');
SELECT kizunasync.cursor_encode(1, NULL);
SELECT kizunasync.cursor_encode(1, 9, NULL);
SELECT kizunasync.cursor_encode(1, 9, '{5,NULL}');
SELECT kizunasync.cursor_encode(1, 9, '{{5,6},{7,8}}');
SELECT kizunasync.cursor_encode(NULL, 1000, ARRAY(SELECT generate_series(1, 513)::bigint));
SELECT length(kizunasync.cursor_encode(NULL, 1000, ARRAY(SELECT generate_series(1, 512)::bigint)));
-- internal helpers: pinned search_path, no EXECUTE for the API roles
SELECT p.proname, p.proconfig, p.proisstrict,
       has_function_privilege('authenticated', p.oid, 'EXECUTE') AS authenticated,
       has_function_privilege('anon', p.oid, 'EXECUTE') AS anon,
       has_function_privilege('service_role', p.oid, 'EXECUTE') AS service_role
  FROM pg_proc p
 WHERE p.pronamespace = 'kizunasync'::regnamespace AND p.proname LIKE 'cursor\_%'
 ORDER BY p.proname;
SET ROLE authenticated;
SELECT * FROM kizunasync.cursor_parse('0');
RESET ROLE;
