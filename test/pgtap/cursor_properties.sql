-- Cursor codec properties over generated input (the fixed cases are in
-- test/sql/10_cursor.sql and the shared vectors lane).
BEGIN;
SELECT plan(4);
SELECT setseed(0.4242);

-- 2000 random valid cursors: random start (or none), high-water, and a random
-- subset of [1, high-water) as holes.
CREATE TEMP TABLE gen AS
SELECT g AS id,
       CASE WHEN random() < 0.5 THEN NULL
            ELSE (random() * 1e6)::bigint END AS start,
       hw,
       ARRAY(SELECT DISTINCT (1 + random() * (hw - 2))::bigint
               FROM generate_series(1, CASE WHEN hw > 1 THEN (random() * 12)::int ELSE 0 END)
              ORDER BY 1) AS holes
  FROM generate_series(1, 2000) AS g,
       LATERAL (SELECT CASE WHEN random() < 0.1 THEN 9223372036854775807 - (random() * 100)::bigint
                            ELSE (random() * 1e9)::bigint END
                       + (g % 1) AS hw) AS h;  -- "g % 1" makes it run per row

SELECT ok((SELECT count(*) FILTER (WHERE start IS NULL) > 100
               AND count(*) FILTER (WHERE start IS NOT NULL) > 100
               AND count(*) FILTER (WHERE cardinality(holes) >= 5) > 100
               AND count(*) FILTER (WHERE hw > 9223372036854775000) > 100
             FROM gen),
          'generator covers checkpoints, continuations, holes and values near 2^63');

SELECT is((SELECT count(*)
             FROM gen, LATERAL kizunasync.cursor_parse(kizunasync.cursor_encode(start, hw, holes)) AS p
            WHERE p.start IS DISTINCT FROM gen.start OR p.high_water <> gen.hw
               OR p.holes <> gen.holes),
          0::bigint,
          'encode then parse gives back 2000 random cursors unchanged');

-- Deleting any one byte of a valid token gives either a valid token that
-- round-trips or a 22023 refusal, never another error.
CREATE FUNCTION pg_temp.outcome(token text) RETURNS text LANGUAGE plpgsql AS $f$
BEGIN
  IF (SELECT kizunasync.cursor_encode(p.start, p.high_water, p.holes)
        FROM kizunasync.cursor_parse(token) AS p) = token THEN
    RETURN 'round-trip';
  END IF;
  RETURN 'changed';
EXCEPTION WHEN OTHERS THEN
  RETURN 'sqlstate ' || SQLSTATE;
END
$f$;

CREATE TEMP TABLE mutants AS
SELECT pg_temp.outcome(left(t, i - 1) || substr(t, i + 1)) AS outcome
  FROM (SELECT kizunasync.cursor_encode(start, hw, holes) AS t FROM gen WHERE id <= 300) AS s,
       LATERAL generate_series(1, length(t)) AS i;

SELECT is((SELECT count(*) FROM mutants WHERE outcome NOT IN ('round-trip', 'sqlstate 22023')),
          0::bigint, 'single-byte deletions: only round trips or 22023');
SELECT cmp_ok((SELECT count(*) FROM mutants WHERE outcome = 'sqlstate 22023'), '>', 0::bigint,
              'single-byte deletions: some are refused');

SELECT * FROM finish();
ROLLBACK;
