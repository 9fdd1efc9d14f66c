-- CHECKPOINT_EXPIRED also covers holes: a hole is a change the client has not
-- received, so a hole below the reap horizon (whose tombstone may be gone)
-- expires the cursor like a start below it would.
SET client_min_messages = warning;
CREATE TABLE public.ex_items (id int PRIMARY KEY, v text);
GRANT SELECT ON public.ex_items TO authenticated;
SELECT kizunasync.sync_table('public.ex_items') AS seeded;
RESET client_min_messages;
UPDATE kizunasync.reap_state SET reaped_seq = 10;
CREATE FUNCTION ex_pull(cur text) RETURNS text LANGUAGE sql AS $$
  SELECT coalesce(p -> 'signal' ->> 'type' || ', cursor echoed ' || (p ->> 'cursor'), 'data page')
    FROM (SELECT kizunasync.pull('[{"table": "ex_items"}]', cur, 1) AS p) s $$;
BEGIN;
SET LOCAL ROLE authenticated;
SELECT set_config('request.jwt.claims', '{"sub": "00000000-0000-4000-8000-a10000000001", "role": "authenticated"}', true) IS NOT NULL AS claims;
SELECT ex_pull('9');          -- start below the horizon
SELECT ex_pull('20~5');       -- a hole below the horizon
SELECT ex_pull('3:20~5.12');  -- continuation: start and a hole below
SELECT ex_pull('10');         -- at the horizon: fine
SELECT ex_pull('20~10.12');   -- holes at or above the horizon: fine
SELECT ex_pull('0');          -- a bootstrap never expires
ROLLBACK;
SET client_min_messages = warning;
UPDATE kizunasync.reap_state SET reaped_seq = 0;
DROP FUNCTION ex_pull(text);
SELECT kizunasync.unsync_table('public.ex_items');
DROP TABLE public.ex_items;
RESET client_min_messages;
