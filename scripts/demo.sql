-- kizunasync demo: one synced table, one user, a push and a pull.
\set QUIET on
CREATE EXTENSION kizunasync;
CREATE TABLE public.todos (
  id uuid PRIMARY KEY,
  owner_id uuid NOT NULL,
  title text NOT NULL,
  done boolean NOT NULL DEFAULT false,
  updated_at timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE public.todos ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON public.todos USING (owner_id = auth.uid()) WITH CHECK (owner_id = auth.uid());
GRANT SELECT, INSERT, UPDATE, DELETE ON public.todos TO authenticated;
SELECT kizunasync.sync_table('public.todos', bucket_column => 'owner_id');
\set QUIET off
\echo
\echo '== push (as authenticated user 6f1c2a9e-...): insert one todo'
BEGIN;
SET LOCAL ROLE authenticated;
SELECT set_config('request.jwt.claims', '{"sub":"6f1c2a9e-2f6d-4c1e-9a7b-0d2e3f4a5b6c","role":"authenticated"}', true) IS NOT NULL AS claims_set;
SELECT jsonb_pretty(kizunasync.push(
  batch => '{"atomic": false, "mutations": [{"mutation_id": "0b6a4a8e-5f0c-4c49-9a55-3f4a2c1d9e01", "table": "todos", "pk": "1d7f3b2a-8c4e-4f6a-9b1d-2e3f4a5b6c7d", "op": "insert", "columns": {"id": "1d7f3b2a-8c4e-4f6a-9b1d-2e3f4a5b6c7d", "owner_id": "6f1c2a9e-2f6d-4c1e-9a7b-0d2e3f4a5b6c", "title": "try kizunasync"}}]}',
  last_mutation_id => NULL,
  schema_version => 1)) AS push_response;
COMMIT;
\echo '== pull (same user): bootstrap from cursor "0"'
BEGIN;
SET LOCAL ROLE authenticated;
SELECT set_config('request.jwt.claims', '{"sub":"6f1c2a9e-2f6d-4c1e-9a7b-0d2e3f4a5b6c","role":"authenticated"}', true) IS NOT NULL AS claims_set;
SELECT jsonb_pretty(kizunasync.pull(
  buckets => '[{"table": "todos", "params": {"owner_id": "6f1c2a9e-2f6d-4c1e-9a7b-0d2e3f4a5b6c"}}]',
  cursor => '0',
  schema_version => 1)) AS pull_response;
COMMIT;
\echo '== pull as another user: RLS keeps the row private'
BEGIN;
SET LOCAL ROLE authenticated;
SELECT set_config('request.jwt.claims', '{"sub":"00000000-0000-4000-8000-00000000000b","role":"authenticated"}', true) IS NOT NULL AS claims_set;
SELECT jsonb_pretty(kizunasync.pull(
  buckets => '[{"table": "todos", "params": {"owner_id": "6f1c2a9e-2f6d-4c1e-9a7b-0d2e3f4a5b6c"}}]',
  cursor => '0',
  schema_version => 1)) AS pull_response;
COMMIT;
