-- Read-only views of the entries in the form of the tables they replaced
-- (decisions/0092): changelog, the row entries, and tombstones, with the
-- table's wire name, the row key text and the bucket value label spelled
-- out (src/entry.c: a key is one format byte, 'i' an 8-byte integer, 'u'
-- a uuid's 16 bytes, 't' the key text).  For the extension owner and the
-- operator reading what the bookkeeping holds; no API role may read them.
-- Every name is qualified, so no search_path takes part.
CREATE OR REPLACE VIEW kizunasync.changelog AS
SELECT e.seq,
	   s.table_name,
	   CASE pg_catalog.get_byte(e.key, 0)
		 WHEN 105 THEN (('x' OPERATOR(pg_catalog.||) pg_catalog.encode(pg_catalog.substr(e.key, 2, 8), 'hex'))::pg_catalog.bit(64)::pg_catalog.int8)::pg_catalog.text
		 WHEN 117 THEN (pg_catalog.encode(pg_catalog.substr(e.key, 2, 16), 'hex')::pg_catalog.uuid)::pg_catalog.text
		 ELSE pg_catalog.convert_from(pg_catalog.substr(e.key, 2), pg_catalog.getdatabaseencoding())
	   END COLLATE "C" AS pk,
	   (SELECT b.label FROM kizunasync.buckets b
		 WHERE b.id OPERATOR(pg_catalog.=) e.bucket AND b.tid OPERATOR(pg_catalog.=) e.tid AND e.bucket OPERATOR(pg_catalog.<>) 0 LIMIT 1) COLLATE "C" AS bucket_value,
	   e.row_xmin
  FROM kizunasync.entries e
  LEFT JOIN kizunasync.synced_tables s ON s.id OPERATOR(pg_catalog.=) e.tid
 WHERE e.kind OPERATOR(pg_catalog.=) 'r';
COMMENT ON VIEW kizunasync.changelog IS 'the row entries: a synced row''s latest change (decisions/0092)';

CREATE OR REPLACE VIEW kizunasync.tombstones AS
SELECT e.seq,
	   s.table_name,
	   CASE pg_catalog.get_byte(e.key, 0)
		 WHEN 105 THEN (('x' OPERATOR(pg_catalog.||) pg_catalog.encode(pg_catalog.substr(e.key, 2, 8), 'hex'))::pg_catalog.bit(64)::pg_catalog.int8)::pg_catalog.text
		 WHEN 117 THEN (pg_catalog.encode(pg_catalog.substr(e.key, 2, 16), 'hex')::pg_catalog.uuid)::pg_catalog.text
		 ELSE pg_catalog.convert_from(pg_catalog.substr(e.key, 2), pg_catalog.getdatabaseencoding())
	   END COLLATE "C" AS pk,
	   COALESCE((SELECT b.label FROM kizunasync.buckets b
				  WHERE b.id OPERATOR(pg_catalog.=) e.bucket AND b.tid OPERATOR(pg_catalog.=) e.tid AND e.bucket OPERATOR(pg_catalog.<>) 0 LIMIT 1), '') COLLATE "C" AS bucket_value,
	   e.snapshot AS bucket_snapshot,
	   e.deleted_at
  FROM kizunasync.entries e
  LEFT JOIN kizunasync.synced_tables s ON s.id OPERATOR(pg_catalog.=) e.tid
 WHERE e.kind OPERATOR(pg_catalog.=) 'd';
COMMENT ON VIEW kizunasync.tombstones IS 'the tombstones: deleted rows, and rows moved out of a bucket (decisions/0092)';

-- A dump taken on 0.1.0 or 0.2.0 holds the rows of changelog and tombstones, tables
-- then: pg_dump writes them as COPY into these views, which the triggers
-- turn into entries (src/migrate.c): each row is held until its synced
-- table's row is restored too, then moved (statement triggers here and on
-- synced_tables, sql/src/90_triggers.sql).  Only the extension's owner may
-- write into the views (no grants).
CREATE OR REPLACE FUNCTION kizunasync._restore_row() RETURNS trigger
	AS 'MODULE_PATHNAME', 'kz_restore_row' LANGUAGE C;
CREATE OR REPLACE FUNCTION kizunasync._restore_claim() RETURNS trigger
	AS 'MODULE_PATHNAME', 'kz_restore_claim' LANGUAGE C;
COMMENT ON FUNCTION kizunasync._restore_row() IS
  'internal: holds a row of an older release''s dump restored into the changelog or tombstones view';
COMMENT ON FUNCTION kizunasync._restore_claim() IS
  'internal: moves held rows of an older release''s dump into the entries once their synced table is restored';
CREATE OR REPLACE TRIGGER kizunasync_restore_row INSTEAD OF INSERT ON kizunasync.changelog
	FOR EACH ROW EXECUTE FUNCTION kizunasync._restore_row();
CREATE OR REPLACE TRIGGER kizunasync_restore_claim AFTER INSERT ON kizunasync.changelog
	FOR EACH STATEMENT EXECUTE FUNCTION kizunasync._restore_claim();
CREATE OR REPLACE TRIGGER kizunasync_restore_row INSTEAD OF INSERT ON kizunasync.tombstones
	FOR EACH ROW EXECUTE FUNCTION kizunasync._restore_row();
CREATE OR REPLACE TRIGGER kizunasync_restore_claim AFTER INSERT ON kizunasync.tombstones
	FOR EACH STATEMENT EXECUTE FUNCTION kizunasync._restore_claim();
