-- Every object of the extension and who may use it.  A new function or table
-- shows up here, so granting it (or forgetting to revoke it) is a visible,
-- reviewed change of this file's expected output.
-- Functions: EXECUTE for the API roles (PUBLIC is covered by anon, which
-- holds no role but PUBLIC) and the database owner, SECURITY DEFINER, and
-- any SET clauses.  Since 0.2.0 every function runs as its caller and
-- touches the bookkeeping in privileged sections (decisions/0060), so none
-- is SECURITY DEFINER.
SELECT p.oid::regprocedure::text AS function,
       has_function_privilege('anon', p.oid, 'EXECUTE') AS anon,
       has_function_privilege('authenticated', p.oid, 'EXECUTE') AS authn,
       has_function_privilege('service_role', p.oid, 'EXECUTE') AS service,
       has_function_privilege('pg_database_owner', p.oid, 'EXECUTE') AS db_owner,
       p.prosecdef AS definer,
       coalesce(array_to_string(p.proconfig, ','), '-') AS config
  FROM pg_proc p
  JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'kizunasync'
 ORDER BY 1;
SELECT count(*) AS security_definer_functions
  FROM pg_proc p
  JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'kizunasync'
 WHERE p.prosecdef;
-- Relations: any privilege at all for the API roles.
SELECT c.oid::regclass::text AS relation, c.relkind,
       has_table_privilege('anon', c.oid, 'SELECT,INSERT,UPDATE,DELETE,TRUNCATE,REFERENCES,TRIGGER') AS anon,
       has_table_privilege('authenticated', c.oid, 'SELECT,INSERT,UPDATE,DELETE,TRUNCATE,REFERENCES,TRIGGER') AS authn,
       has_table_privilege('service_role', c.oid, 'SELECT') AS service_select,
       has_table_privilege('service_role', c.oid, 'INSERT,UPDATE,DELETE,TRUNCATE') AS service_write,
       has_table_privilege('pg_database_owner', c.oid, 'SELECT') AS db_owner_select,
       has_table_privilege('pg_database_owner', c.oid, 'INSERT,UPDATE,DELETE,TRUNCATE') AS db_owner_write
  FROM pg_class c
  JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'kizunasync'
 WHERE c.relkind IN ('r', 'v', 'S')
 ORDER BY 1;
-- The schema: anon may not even look inside.
SELECT has_schema_privilege('anon', 'kizunasync', 'USAGE') AS anon_usage,
       has_schema_privilege('authenticated', 'kizunasync', 'USAGE') AS authn_usage,
       has_schema_privilege('authenticated', 'kizunasync', 'CREATE') AS authn_create,
       has_schema_privilege('pg_database_owner', 'kizunasync', 'USAGE') AS db_owner_usage,
       has_schema_privilege('pg_database_owner', 'kizunasync', 'CREATE') AS db_owner_create;
-- No SQL-language function and no SECURITY DEFINER function at all: an
-- older library never meets one of ours in an upgrade window
-- (decisions/0080, "SQL-language objects of older releases").
SELECT l.lanname, p.prosecdef, count(*) AS functions
  FROM pg_proc p
  JOIN pg_language l ON l.oid = p.prolang
  JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'kizunasync'
 GROUP BY 1, 2 ORDER BY 1, 2;
-- pg_monitor, the predefined role a metrics exporter's login is granted
-- (README "Monitoring", decisions/0060): the monitoring views and the
-- functions they call as their reader, nothing else.
SELECT has_schema_privilege('pg_monitor', 'kizunasync', 'USAGE') AS monitor_usage,
       has_schema_privilege('pg_monitor', 'kizunasync', 'CREATE') AS monitor_create;
SELECT c.oid::regclass::text AS monitor_may_select
  FROM pg_class c
  JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'kizunasync'
 WHERE has_table_privilege('pg_monitor', c.oid, 'SELECT') ORDER BY 1;
SELECT p.oid::regprocedure::text AS monitor_may_execute
  FROM pg_proc p
  JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'kizunasync'
 WHERE has_function_privilege('pg_monitor', p.oid, 'EXECUTE') ORDER BY 1;
