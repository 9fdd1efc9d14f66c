-- Installing without the Supabase API roles fails with a clear message and a
-- hint (everything here is transactional and rolled back).
BEGIN;
SET client_min_messages = warning;
DROP EXTENSION kizunasync CASCADE;
ALTER ROLE anon RENAME TO anon_away;
ALTER ROLE service_role RENAME TO service_role_away;
RESET client_min_messages;
CREATE EXTENSION kizunasync;
ROLLBACK;
SELECT extversion FROM pg_extension WHERE extname = 'kizunasync';
