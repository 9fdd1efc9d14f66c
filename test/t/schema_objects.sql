-- Every object of extension kizunasync, normalized to text: one line per
-- fact, sorted, so that two databases can be compared with diff (an
-- upgraded one and a fresh install: test/t/upgrade.sh).  Run with
--   psql -X -A -t -q -f test/t/schema_objects.sql
-- Nothing here depends on OIDs, on the owning role's name (the extension
-- owner prints as OWNER) or on data (sequence state, rows).
--
-- Lines start with the object they describe, so a diff line names it:
--   extension ...                  version, schema, relocatable
--   config-dump <rel> ...          pg_extension_config_dump registrations
--   schema kizunasync ...          owner, ACL, comment
--   member <identity>              every pg_depend 'e' member
--   non-member <identity>          objects in schema kizunasync that are not members
--   table|view|sequence <name> ... relkind, persistence, RLS, options, ACL, comment
--   <rel> column #N <name> ...     physical position, type, collation, NOT NULL,
--                                  default, identity, generated, dropped, ACL, comment
--   <rel> constraint|index|trigger|policy|rule <name> ...
--   sequence <name> params ...     type, start, increment, min, max, cache, cycle, owned by
--   function <sig> | <line>        pg_get_functiondef, line by line; then ACL, comment
--   event trigger <name> ...       event, function, enabled, tags, comment
--   type <name> ...                member types (enum labels, domain base/constraints)
--   init-privs <object> ...        pg_init_privs (what pg_dump treats as the
--                                  extension's own privileges)
-- Physical column positions are compared on purpose: the C code reads
-- bookkeeping tuples by attribute number (src/sequencing.c), so a column
-- added at the end by an upgrade, or a dropped column left behind, is a
-- real difference from a fresh install.
\set ON_ERROR_STOP 1
SET search_path = pg_catalog;
SET client_min_messages = warning;

-- ACL as "grantee=privs/grantor" items, sorted; the extension owner prints
-- as OWNER, PUBLIC as PUBLIC; a NULL ACL is shown as the default it stands for
CREATE FUNCTION pg_temp.rn(r oid) RETURNS text LANGUAGE sql STABLE AS $$
	SELECT CASE WHEN r = 0 THEN 'PUBLIC'
				WHEN r = (SELECT e.extowner FROM pg_extension e WHERE e.extname = 'kizunasync') THEN 'OWNER'
				ELSE coalesce((SELECT rolname FROM pg_roles WHERE oid = r), 'role#' || r) END
$$;
CREATE FUNCTION pg_temp.acl(a aclitem[], objtype "char", owner oid) RETURNS text
LANGUAGE sql STABLE AS $$
	SELECT coalesce(string_agg(g, ' ' ORDER BY g), '(none)')
	  FROM (SELECT pg_temp.rn(x.grantee) || '=' ||
				   string_agg(x.privilege_type || CASE WHEN x.is_grantable THEN '*' ELSE '' END, ','
							  ORDER BY x.privilege_type) ||
				   '/' || pg_temp.rn(x.grantor) AS g
			  FROM aclexplode(coalesce(a, acldefault(objtype, owner))) x
			 GROUP BY x.grantee, x.grantor) s
$$;
CREATE FUNCTION pg_temp.cmt(cls regclass, o oid, sub integer DEFAULT 0) RETURNS text
LANGUAGE sql STABLE AS $$
	SELECT coalesce(' comment=' || quote_literal(d.description), '')
	  FROM (SELECT 1) one
	  LEFT JOIN pg_description d ON d.classoid = cls AND d.objoid = o AND d.objsubid = sub
$$;

WITH ext AS (
	SELECT e.oid, e.extowner, e.extnamespace, e.extversion, e.extrelocatable,
		   e.extconfig, e.extcondition
	  FROM pg_extension e WHERE e.extname = 'kizunasync'),
mem AS (
	SELECT d.classid, d.objid FROM pg_depend d, ext
	 WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid AND d.deptype = 'e'),
rels AS (
	SELECT c.* FROM pg_class c JOIN mem ON mem.classid = 'pg_class'::regclass AND mem.objid = c.oid),
-- relations whose sub-objects we list: member relations
facts(k, line) AS (
	-- the extension itself
	SELECT 'a', format('extension kizunasync version=%s schema=%s relocatable=%s',
					   extversion, extnamespace::regnamespace, extrelocatable) FROM ext
	UNION ALL
	SELECT 'b', format('config-dump %s condition=%L', cfg.rel::regclass, cfg.cond)
	  FROM ext, unnest(ext.extconfig, ext.extcondition) AS cfg(rel, cond)
	UNION ALL
	SELECT 'c', format('schema %s owner=%s acl=%s%s', n.nspname, pg_temp.rn(n.nspowner),
					   pg_temp.acl(n.nspacl, 'n', n.nspowner), pg_temp.cmt('pg_namespace', n.oid))
	  FROM pg_namespace n WHERE n.nspname = 'kizunasync'
	UNION ALL
	SELECT 'd', 'member ' || pg_describe_object(mem.classid, mem.objid, 0) FROM mem
	UNION ALL
	-- objects living in the schema that are not members
	SELECT 'e', 'non-member ' || pg_describe_object('pg_class'::regclass, c.oid, 0)
	  FROM pg_class c
	 WHERE c.relnamespace = 'kizunasync'::regnamespace AND c.relkind IN ('r', 'v', 'm', 'S', 'f', 'p', 'c')
	   AND NOT EXISTS (SELECT 1 FROM mem WHERE mem.classid = 'pg_class'::regclass AND mem.objid = c.oid)
	   AND NOT EXISTS (SELECT 1 FROM pg_depend d JOIN mem ON mem.classid = d.refclassid AND mem.objid = d.refobjid
					    WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('i', 'a'))
	UNION ALL
	SELECT 'e', 'non-member ' || pg_describe_object('pg_proc'::regclass, p.oid, 0)
	  FROM pg_proc p
	 WHERE p.pronamespace = 'kizunasync'::regnamespace
	   AND NOT EXISTS (SELECT 1 FROM mem WHERE mem.classid = 'pg_proc'::regclass AND mem.objid = p.oid)
	UNION ALL
	SELECT 'e', 'non-member ' || pg_describe_object('pg_type'::regclass, t.oid, 0)
	  FROM pg_type t
	 WHERE t.typnamespace = 'kizunasync'::regnamespace AND t.typrelid = 0 AND t.typelem = 0
	   AND NOT EXISTS (SELECT 1 FROM mem WHERE mem.classid = 'pg_type'::regclass AND mem.objid = t.oid)
	UNION ALL
	-- relations
	SELECT 'r' || r.oid::regclass::text,
		   format('%s %s persistence=%s rls=%s force_rls=%s replica_identity=%s options=%s acl=%s%s',
				  CASE r.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' WHEN 'S' THEN 'sequence'
								 WHEN 'm' THEN 'materialized view' WHEN 'p' THEN 'partitioned table'
								 ELSE 'relkind ' || r.relkind::text END,
				  r.oid::regclass, r.relpersistence, r.relrowsecurity, r.relforcerowsecurity,
				  r.relreplident, coalesce(r.reloptions::text, '{}'),
				  pg_temp.acl(r.relacl, (CASE r.relkind WHEN 'S' THEN 's' ELSE 'r' END)::"char", r.relowner),
				  pg_temp.cmt('pg_class', r.oid))
	  FROM rels r
	UNION ALL
	SELECT 'r' || r.oid::regclass::text || ' a' || lpad(a.attnum::text, 4, '0'),
		   CASE WHEN a.attisdropped THEN format('%s column #%s (dropped)', r.oid::regclass, a.attnum)
		   ELSE format('%s column #%s %s %s%s%s%s%s%s acl=%s%s',
				  r.oid::regclass, a.attnum, quote_ident(a.attname), format_type(a.atttypid, a.atttypmod),
				  CASE WHEN a.attcollation <> 0 AND a.attcollation <> t.typcollation
					   THEN ' collate ' || a.attcollation::regcollation ELSE '' END,
				  CASE WHEN a.attnotnull THEN ' not null' ELSE '' END,
				  CASE WHEN ad.adbin IS NOT NULL AND a.attgenerated = ''
					   THEN ' default ' || pg_get_expr(ad.adbin, ad.adrelid) ELSE '' END,
				  CASE a.attidentity WHEN 'a' THEN ' generated always as identity'
									 WHEN 'd' THEN ' generated by default as identity' ELSE '' END,
				  CASE WHEN a.attgenerated = 's'
					   THEN ' generated always as (' || pg_get_expr(ad.adbin, ad.adrelid) || ') stored' ELSE '' END,
				  pg_temp.acl(a.attacl, 'c', r.relowner), pg_temp.cmt('pg_class', r.oid, a.attnum)) END
	  FROM rels r
	  JOIN pg_attribute a ON a.attrelid = r.oid AND a.attnum > 0
	  LEFT JOIN pg_type t ON t.oid = a.atttypid
	  LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
	 WHERE r.relkind IN ('r', 'v', 'm', 'p', 'f')
	UNION ALL
	SELECT 'r' || r.oid::regclass::text || ' c' || con.conname,
		   format('%s constraint %s %s%s', r.oid::regclass, quote_ident(con.conname),
				  pg_get_constraintdef(con.oid), pg_temp.cmt('pg_constraint', con.oid))
	  FROM rels r JOIN pg_constraint con ON con.conrelid = r.oid
	UNION ALL
	SELECT 'r' || r.oid::regclass::text || ' i' || i.indexrelid::regclass::text,
		   format('%s index %s%s%s', r.oid::regclass, pg_get_indexdef(i.indexrelid),
				  CASE WHEN i.indisclustered THEN ' clustered' ELSE '' END,
				  pg_temp.cmt('pg_class', i.indexrelid))
	  FROM rels r JOIN pg_index i ON i.indrelid = r.oid
	UNION ALL
	SELECT 'r' || r.oid::regclass::text || ' t' || tg.tgname,
		   format('%s trigger %s enabled=%s%s', r.oid::regclass, pg_get_triggerdef(tg.oid),
				  tg.tgenabled, pg_temp.cmt('pg_trigger', tg.oid))
	  FROM rels r JOIN pg_trigger tg ON tg.tgrelid = r.oid AND NOT tg.tgisinternal
	UNION ALL
	SELECT 'r' || r.oid::regclass::text || ' p' || pol.polname,
		   format('%s policy %s cmd=%s permissive=%s roles=%s using=%s check=%s', r.oid::regclass,
				  quote_ident(pol.polname), pol.polcmd, pol.polpermissive,
				  (SELECT string_agg(pg_temp.rn(x), ',' ORDER BY pg_temp.rn(x)) FROM unnest(pol.polroles) x),
				  coalesce(pg_get_expr(pol.polqual, pol.polrelid), '-'),
				  coalesce(pg_get_expr(pol.polwithcheck, pol.polrelid), '-'))
	  FROM rels r JOIN pg_policy pol ON pol.polrelid = r.oid
	UNION ALL
	SELECT 'r' || r.oid::regclass::text || ' u' || rw.rulename,
		   format('%s rule %s', r.oid::regclass, pg_get_ruledef(rw.oid))
	  FROM rels r JOIN pg_rewrite rw ON rw.ev_class = r.oid AND rw.rulename <> '_RETURN'
	UNION ALL
	SELECT 'r' || r.oid::regclass::text || ' v',
		   format('%s view definition: %s', r.oid::regclass, regexp_replace(pg_get_viewdef(r.oid, true), '\s+', ' ', 'g'))
	  FROM rels r WHERE r.relkind IN ('v', 'm')
	UNION ALL
	SELECT 'r' || r.oid::regclass::text || ' s',
		   format('sequence %s params type=%s start=%s increment=%s min=%s max=%s cache=%s cycle=%s owned_by=%s',
				  r.oid::regclass, s.seqtypid::regtype, s.seqstart, s.seqincrement, s.seqmin, s.seqmax,
				  s.seqcache, s.seqcycle,
				  coalesce((SELECT d.deptype::text || ':' || pg_describe_object(d.refclassid, d.refobjid, d.refobjsubid)
							  FROM pg_depend d
							 WHERE d.classid = 'pg_class'::regclass AND d.objid = r.oid
							   AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i')), '-'))
	  FROM rels r JOIN pg_sequence s ON s.seqrelid = r.oid
	UNION ALL
	-- functions: the whole definition, line by line, then ACL and comment
	SELECT 'p' || p.oid::regprocedure::text || lpad(l.n::text, 5, '0'),
		   'function ' || p.oid::regprocedure::text || ' | ' || l.line
	  FROM mem JOIN pg_proc p ON mem.classid = 'pg_proc'::regclass AND mem.objid = p.oid
	 CROSS JOIN LATERAL regexp_split_to_table(
			CASE WHEN p.prokind = 'a' THEN 'aggregate' ELSE pg_get_functiondef(p.oid) END, '\n')
			WITH ORDINALITY AS l(line, n)
	UNION ALL
	SELECT 'p' || p.oid::regprocedure::text || '~',
		   format('function %s | owner-independent: kind=%s cost=%s rows=%s leakproof=%s acl=%s%s',
				  p.oid::regprocedure, p.prokind, p.procost, p.prorows, p.proleakproof,
				  pg_temp.acl(p.proacl, 'f', p.proowner), pg_temp.cmt('pg_proc', p.oid))
	  FROM mem JOIN pg_proc p ON mem.classid = 'pg_proc'::regclass AND mem.objid = p.oid
	UNION ALL
	SELECT 'v' || ev.evtname,
		   format('event trigger %s on %s execute %s enabled=%s tags=%s owner=%s%s', ev.evtname, ev.evtevent,
				  ev.evtfoid::regprocedure, ev.evtenabled, coalesce(ev.evttags::text, '-'),
				  pg_temp.rn(ev.evtowner), pg_temp.cmt('pg_event_trigger', ev.oid))
	  FROM mem JOIN pg_event_trigger ev ON mem.classid = 'pg_event_trigger'::regclass AND mem.objid = ev.oid
	UNION ALL
	SELECT 'y' || t.oid::regtype::text,
		   format('type %s typtype=%s %s acl=%s%s', t.oid::regtype, t.typtype,
				  CASE t.typtype
					WHEN 'e' THEN 'labels=' || (SELECT string_agg(quote_literal(e.enumlabel), ',' ORDER BY e.enumsortorder)
												 FROM pg_enum e WHERE e.enumtypid = t.oid)
					WHEN 'd' THEN 'base=' || format_type(t.typbasetype, t.typtypmod) || ' notnull=' || t.typnotnull ||
								  ' default=' || coalesce(t.typdefault, '-') || ' checks=' ||
								  coalesce((SELECT string_agg(pg_get_constraintdef(c.oid), ' AND ' ORDER BY c.conname)
											  FROM pg_constraint c WHERE c.contypid = t.oid), '-')
					WHEN 'c' THEN 'attrs=' || (SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum)
												FROM pg_attribute a WHERE a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped)
					ELSE '' END,
				  pg_temp.acl(t.typacl, 'T', t.typowner), pg_temp.cmt('pg_type', t.oid))
	  FROM mem JOIN pg_type t ON mem.classid = 'pg_type'::regclass AND mem.objid = t.oid
	UNION ALL
	-- members of any other catalog: their identity is already a "member" line
	-- initial privileges (pg_dump dumps only the difference from these)
	SELECT 'z' || pg_describe_object(ip.classoid, ip.objoid, ip.objsubid),
		   format('init-privs %s type=%s acl=%s', pg_describe_object(ip.classoid, ip.objoid, ip.objsubid),
				  ip.privtype, pg_temp.acl(ip.initprivs, 'r', (SELECT extowner FROM ext)))
	  FROM pg_init_privs ip
	 WHERE (ip.classoid, ip.objoid) IN (SELECT classid, objid FROM mem)
		OR (ip.classoid = 'pg_namespace'::regclass AND ip.objoid = 'kizunasync'::regnamespace)
)
SELECT line FROM facts ORDER BY k, line;
