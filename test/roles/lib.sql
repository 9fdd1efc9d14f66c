-- Helpers of the roles lane, installed by the runner (as postgres) into every
-- database the lane creates, after the stand-ins and the extension.
--
-- kzt: assertions.  Each returns one TAP-like line ("ok - name" or "not ok -
-- name" with "# ..." detail lines); the runner numbers them.  They are
-- executable by every role, so a role's own session can check the SQLSTATE
-- of the statement it just ran (psql's :SQLSTATE / :LAST_ERROR_MESSAGE).
--
-- kzlog: observers.  kzlog.observe(scope) records the role it runs as; a
-- "bad" observation (a superuser, the extension owner, or the role named as
-- also_bad) also bumps a per-scope sequence, which survives the rollback of
-- the statement that ran it.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE SCHEMA kzt;
GRANT USAGE ON SCHEMA kzt TO PUBLIC;

CREATE FUNCTION kzt.ok(cond boolean, name text, detail text DEFAULT NULL) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
	SELECT CASE WHEN coalesce(cond, false) THEN 'ok - ' || name
		ELSE 'not ok - ' || name || coalesce(E'\n# ' || replace(detail, E'\n', E'\n# '), '') END
$$;

-- the SQLSTATE of the statement just run (psql :'SQLSTATE') is want
CREATE FUNCTION kzt.expect(got text, want text, name text, msg text DEFAULT NULL) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
	SELECT kzt.ok(got = want, name,
		format('expected SQLSTATE %s, got %s', want, got)
		|| CASE WHEN got <> '00000' AND msg IS NOT NULL AND msg <> '' THEN ': ' || msg ELSE '' END)
$$;

-- ... and it affected at least one row (psql :ROW_COUNT)
CREATE FUNCTION kzt.expect_rows(got text, nrows bigint, want text, name text, msg text DEFAULT NULL) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
	SELECT kzt.ok(got = want AND nrows > 0, name,
		format('expected SQLSTATE %s and at least one row, got %s with %s rows', want, got, nrows)
		|| CASE WHEN got <> '00000' AND msg IS NOT NULL AND msg <> '' THEN ': ' || msg ELSE '' END)
$$;

CREATE FUNCTION kzt.is(got anycompatible, want anycompatible, name text) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
	SELECT kzt.ok(got IS NOT DISTINCT FROM want, name,
		format('got:      %s', coalesce(got::text, 'NULL')) || E'\n' ||
		format('expected: %s', coalesce(want::text, 'NULL')))
$$;

-- a diagnostic line (printed as "# ...")
CREATE FUNCTION kzt.diag(msg text) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
	SELECT '# ' || replace(msg, E'\n', E'\n# ')
$$;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA kzt TO PUBLIC;

CREATE SCHEMA kzlog;
GRANT USAGE ON SCHEMA kzlog TO PUBLIC;
CREATE TABLE kzlog.seen (
	scope text NOT NULL,
	label text,
	cu name NOT NULL,
	su name NOT NULL,
	super boolean NOT NULL,
	bad boolean NOT NULL,
	at timestamptz NOT NULL DEFAULT clock_timestamp()
);
GRANT INSERT, SELECT ON kzlog.seen TO PUBLIC;

-- a scope's counter of bad observations (non-transactional)
CREATE FUNCTION kzlog.scope(scope text) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	EXECUTE format('CREATE SEQUENCE kzlog.%I', 'bad_' || scope);
	EXECUTE format('GRANT USAGE, SELECT, UPDATE ON SEQUENCE kzlog.%I TO PUBLIC', 'bad_' || scope);
END $$;

CREATE FUNCTION kzlog.bad_count(scope text) RETURNS bigint
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	n bigint;
BEGIN
	EXECUTE format('SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM kzlog.%I', 'bad_' || scope) INTO n;
	RETURN n;
END $$;

-- what a scope's code ran as: "label as role (superuser) xN; ..."
CREATE FUNCTION kzlog.seen_as(p_scope text) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
	SELECT coalesce(string_agg(format('%s as %s%s x%s', label, cu, CASE WHEN super THEN ' (superuser)' ELSE '' END, n), '; ' ORDER BY label, cu), 'nothing ran')
	  FROM (SELECT coalesce(label, '?') AS label, cu, bool_or(super) AS super, count(*) AS n
			  FROM kzlog.seen WHERE scope = p_scope GROUP BY 1, 2) s
$$;

-- no bad observation in scope: an assertion line
CREATE FUNCTION kzlog.clean(p_scope text, name text) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
	SELECT kzt.ok(kzlog.bad_count(p_scope) = 0 AND NOT EXISTS (SELECT 1 FROM kzlog.seen s WHERE s.scope = p_scope AND s.bad),
		name, format('%s bad observation(s); ran: %s', kzlog.bad_count(p_scope), kzlog.seen_as(p_scope)))
$$;

-- the extension owner
CREATE FUNCTION kzlog.ext_owner() RETURNS name
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
	SELECT e.extowner::regrole::name FROM pg_extension e WHERE e.extname = 'kizunasync'
$$;

-- Record the role this runs as under scope (label: which code); bad when
-- that role is a superuser, the extension owner, or also_bad.  Never
-- raises; true.  The scope's counter must exist (kzlog.scope).
CREATE FUNCTION kzlog.observe(p_scope text, p_label text DEFAULT NULL, also_bad name DEFAULT NULL) RETURNS boolean
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	is_super boolean;
	is_bad boolean;
BEGIN
	SELECT r.rolsuper INTO is_super FROM pg_roles r WHERE r.rolname = current_user;
	is_bad := coalesce(is_super, false) OR current_user = kzlog.ext_owner()
		OR coalesce(current_user = also_bad, false);
	IF is_bad THEN
		BEGIN
			PERFORM nextval(format('kzlog.%I', 'bad_' || p_scope)::regclass);
		EXCEPTION WHEN OTHERS THEN
			RAISE WARNING 'KZ-OBSERVE-UNRECORDED %: %', p_scope, SQLERRM;
		END;
		RAISE WARNING 'KZ-OBSERVED-BAD scope=% label=% current_user=% session_user=%', p_scope, p_label, current_user, session_user;
	END IF;
	BEGIN
		INSERT INTO kzlog.seen (scope, label, cu, su, super, bad)
		VALUES (p_scope, p_label, current_user, session_user, coalesce(is_super, false), is_bad);
	EXCEPTION WHEN OTHERS THEN
		RAISE WARNING 'KZ-OBSERVE-LOG-FAILED %: % (current_user %)', p_scope, SQLERRM, current_user;
	END;
	RETURN true;
END $$;
-- Run sql as the current user; its SQLSTATE ('00000' when it succeeded).
-- Always rolled back: a statement that should have been refused changes
-- nothing even when it is not.
CREATE FUNCTION kzt.try(sql text) RETURNS text
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	st text;
BEGIN
	BEGIN
		EXECUTE sql;
		RAISE EXCEPTION 'kzt.try rollback' USING ERRCODE = 'KZ000';
	EXCEPTION WHEN OTHERS THEN
		GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE;
	END;
	RETURN CASE WHEN st = 'KZ000' THEN '00000' ELSE st END;
END $$;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA kzt TO PUBLIC;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA kzlog TO PUBLIC;
REVOKE EXECUTE ON FUNCTION kzlog.scope(text) FROM PUBLIC;

-- claims of a test user (uuid from a short tag)
CREATE FUNCTION kzt.uid(tag text) RETURNS uuid
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
	SELECT ('00000000-0000-4000-8000-' || lpad(tag, 12, '0'))::uuid
$$;
CREATE FUNCTION kzt.claims(tag text) RETURNS text
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
	SELECT json_build_object('sub', kzt.uid(tag), 'role', 'authenticated')::text
$$;
-- one push mutation batch
CREATE FUNCTION kzt.m(tbl text, pk text, op text, extra jsonb, mid text) RETURNS jsonb
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
	SELECT jsonb_build_object('mutations', jsonb_build_array(
		jsonb_build_object('mutation_id', kzt.uid(mid), 'table', tbl, 'pk', pk, 'op', op) || extra))
$$;
-- one pull bucket list entry
CREATE FUNCTION kzt.bucket(tbl text, params jsonb DEFAULT NULL) RETURNS jsonb
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
	SELECT jsonb_build_array(jsonb_strip_nulls(jsonb_build_object('table', tbl, 'params', params)))
$$;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA kzt TO PUBLIC;
RESET client_min_messages;
