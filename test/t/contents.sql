-- Ordered content of every table and sequence in the schemas named by psql
-- variable :schemas (a comma-separated list, e.g. -v schemas=kizunasync),
-- one line per row: "<table> <row as jsonb text>", rows sorted; sequences
-- as "<sequence> last_value=N is_called=B".  Used to compare two databases
-- (test/t/dump_restore.sh, test/t/upgrade.sh): run it in both, diff.
-- Relation names are printed schema-qualified; regclass values render as
-- names, so OIDs never show.  Views named in :views (optional, a
-- comma-separated list of names) are listed too, as if tables.
\set ON_ERROR_STOP 1
\if :{?views}
\else
\set views ''
\endif
SET search_path = pg_catalog, public;
SET TimeZone = 'UTC';
SET DateStyle = 'ISO';
SELECT CASE c.relkind
	WHEN 'S' THEN format($q$SELECT %L || ' last_value=' || last_value || ' is_called=' || is_called FROM %s$q$,
		c.oid::regclass::text, c.oid::regclass)
	ELSE format($q$SELECT %L || ' ' || to_jsonb(t)::text FROM %s t ORDER BY 1$q$,
		c.oid::regclass::text, c.oid::regclass)
	END
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = ANY (string_to_array(:'schemas', ','))
   AND (c.relkind IN ('r', 'p', 'S')
		OR (c.relkind = 'v' AND c.relname = ANY (string_to_array(:'views', ','))))
 ORDER BY n.nspname, c.relname
\gexec
