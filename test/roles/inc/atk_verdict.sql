-- Back as postgres: the three assertions about the attacker :role (:tag).
\connect - postgres
\set ON_ERROR_STOP 1
SELECT kzt.ok(EXISTS (SELECT 1 FROM :"sch".seen s WHERE s.action = 'control' AND s.cu = :'role'),
	format('A %s: control: in %s''s own session the shadows ran evil() as %s itself', :'tag', :'role', :'role'));
SELECT kzt.ok(NOT b.is_called AND NOT EXISTS (SELECT 1 FROM :"sch".seen s WHERE s.bad),
	format('A %s: evil() never ran as a superuser or the extension owner', :'tag'),
	format('%s bad call(s) counted (non-transactional); logged: %s', CASE WHEN b.is_called THEN b.last_value ELSE 0 END,
		(SELECT coalesce(string_agg(format(E'\n%s as %s%s%s, called from: %s', s.action, s.cu, CASE WHEN s.super THEN ' (superuser)' ELSE '' END,
				CASE WHEN s.escalated THEN ', ALTER ROLE ... SUPERUSER succeeded' ELSE '' END, left(s.ctx, 400)), '' ORDER BY s.at), 'nothing (rolled back)')
		   FROM :"sch".seen s WHERE s.bad)))
  FROM :"sch".bad b;
SELECT kzt.ok(NOT r.rolsuper, format('A %s: %s is not a superuser afterwards', :'tag', :'role'))
  FROM pg_roles r WHERE r.rolname = :'role';
