-- Operator view: what holds seqs in flight (decisions/0010, "Prepared
-- transactions"): one row per transaction, running or prepared, whose
-- entries are not committed yet, and so are holes of every cursor that
-- reaches them.  No row data, keys, bucket values or user ids.
CREATE OR REPLACE FUNCTION kizunasync._in_flight(
	OUT pid integer,
	OUT prepared_gid text,
	OUT since timestamptz,
	OUT seqs bigint,
	OUT lowest_seq bigint,
	OUT tables text[])
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'kz_in_flight'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION kizunasync._in_flight() IS
  'the transactions holding seqs in flight (read it through kizunasync.in_flight)';

CREATE OR REPLACE VIEW kizunasync.in_flight AS
SELECT f.pid, f.prepared_gid, f.since, f.seqs, f.lowest_seq, f.tables
  FROM kizunasync._in_flight() f;
COMMENT ON VIEW kizunasync.in_flight IS
  'per transaction holding seqs in flight: backend pid or prepared gid, since when, how many, the lowest, for which synced tables';
