-- ---------------------------------------------------------------------------
-- Cursor token codec (src/cursor_core.c, src/cursor.c).  Internal helpers for
-- tests and operators: no API-role grant (99_grants.sql revokes PUBLIC).
-- Pull uses the codec from C directly.
-- ---------------------------------------------------------------------------

-- Parse a cursor token.  start is NULL for a checkpoint token.  Not strict:
-- a NULL token raises 22023 like any invalid one.
CREATE OR REPLACE FUNCTION kizunasync.cursor_parse(cursor text,
		OUT start bigint, OUT high_water bigint, OUT holes bigint[])
	RETURNS record
	LANGUAGE C IMMUTABLE PARALLEL SAFE
	SET search_path = ''
	AS 'MODULE_PATHNAME', 'kizunasync_cursor_parse';

COMMENT ON FUNCTION kizunasync.cursor_parse(text) IS
	'internal: split a cursor token into start (NULL for a checkpoint), high-water and holes; raises 22023 on an invalid or NULL token';

-- Encode a cursor token.  start NULL gives a checkpoint token; holes are a
-- set (sorted here; duplicates, NULLs, values out of range are errors).
CREATE OR REPLACE FUNCTION kizunasync.cursor_encode(start bigint, high_water bigint,
		holes bigint[] DEFAULT '{}')
	RETURNS text
	LANGUAGE C IMMUTABLE PARALLEL SAFE
	SET search_path = ''
	AS 'MODULE_PATHNAME', 'kizunasync_cursor_encode';

COMMENT ON FUNCTION kizunasync.cursor_encode(bigint, bigint, bigint[]) IS
	'internal: build a cursor token from start (NULL for a checkpoint), high-water and holes; raises 22023 on values the grammar cannot express';
