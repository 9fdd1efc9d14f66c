-- Attachments: metadata around Storage objects, checked under the caller's policies.
SET client_min_messages = warning;
CREATE SCHEMA att;
CREATE TABLE att.notes (id uuid PRIMARY KEY, owner_id uuid NOT NULL, title text, image text);
ALTER TABLE att.notes ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON att.notes USING (owner_id = auth.uid()) WITH CHECK (owner_id = auth.uid());
CREATE POLICY shared_read ON att.notes FOR SELECT USING (title = 'shared');
GRANT USAGE ON SCHEMA att TO authenticated;
GRANT SELECT, INSERT, UPDATE, DELETE ON att.notes TO authenticated;
SELECT kizunasync.sync_table('att.notes', bucket_column => 'owner_id', table_name => 'att_notes') >= 0 AS synced;
INSERT INTO att.notes VALUES
  ('00000000-0000-4000-8000-e10000000001', '00000000-0000-4000-8000-a10000000001', 'private', NULL),
  ('00000000-0000-4000-8000-e10000000002', '00000000-0000-4000-8000-a10000000001', 'shared', NULL),
  ('00000000-0000-4000-8000-e10000000003', '00000000-0000-4000-8000-a10000000002', 'b''s note', NULL);
INSERT INTO storage.buckets (id, name) VALUES ('photos', 'photos');
-- storage policy: uploaders read their objects; objects under a shared folder are readable by all
CREATE POLICY read_objects ON storage.objects FOR SELECT
  USING (owner_id = auth.uid()::text OR name LIKE '%/00000000-0000-4000-8000-e10000000002/%');
GRANT SELECT ON storage.objects TO authenticated;
INSERT INTO storage.objects (bucket_id, name, owner_id) VALUES
  ('photos', '00000000-0000-4000-8000-a10000000001/00000000-0000-4000-8000-e10000000001/a.jpg', '00000000-0000-4000-8000-a10000000001'),
  ('photos', '00000000-0000-4000-8000-a10000000001/00000000-0000-4000-8000-e10000000002/b.jpg', '00000000-0000-4000-8000-a10000000001'),
  ('photos', '00000000-0000-4000-8000-a10000000001/00000000-0000-4000-8000-e10000000003/c.jpg', '00000000-0000-4000-8000-a10000000001'),
  ('photos', '00000000-0000-4000-8000-a10000000001/00000000-0000-4000-8000-e10000000001/by-service.jpg', NULL);
RESET client_min_messages;

-- as user A
CREATE FUNCTION att.as_user(u text) RETURNS void LANGUAGE sql AS $$
  SELECT set_config('request.jwt.claims', json_build_object('sub', u, 'role', 'authenticated')::text, true);
  SELECT NULL::void;
$$;
BEGIN;
SET LOCAL ROLE authenticated;
SELECT att.as_user('00000000-0000-4000-8000-a10000000001');
SELECT kizunasync.attachment_confirm('photos', '00000000-0000-4000-8000-a10000000001/00000000-0000-4000-8000-e10000000001/a.jpg',
  repeat('AB', 32), 1234, 'image/jpeg', 'att_notes');
-- a matching re-confirm is fine
SELECT kizunasync.attachment_confirm('photos', '00000000-0000-4000-8000-a10000000001/00000000-0000-4000-8000-e10000000001/a.jpg',
  repeat('ab', 32), 1234, 'image/jpeg');
SELECT m.sha256, m.size, m.media_type, m.created_at <= m.updated_at AS times_ordered
  FROM kizunasync.attachment_metadata('photos', '00000000-0000-4000-8000-a10000000001/00000000-0000-4000-8000-e10000000001/a.jpg') m;
COMMIT;
SELECT bucket_id, object_path, sha256 = repeat('ab', 32) AS sha_lowered, size, media_type, created_by, table_name FROM kizunasync.attachments;

-- refusals, each in its own transaction
\set VERBOSITY default
BEGIN; SET LOCAL ROLE authenticated; SELECT att.as_user('00000000-0000-4000-8000-a10000000001');
SELECT kizunasync.attachment_confirm('photos', '00000000-0000-4000-8000-a10000000001/00000000-0000-4000-8000-e10000000001/a.jpg',
  repeat('cd', 32), 1234, 'image/jpeg');
ROLLBACK;
BEGIN; SET LOCAL ROLE authenticated; SELECT att.as_user('00000000-0000-4000-8000-a10000000001');
-- an owner folder that is not the caller's sub (any text: third-party auth ids are not uuids)
SELECT kizunasync.attachment_confirm('photos', 'not-a-uuid/x/a.jpg', repeat('ab', 32), 1, NULL);
ROLLBACK;
BEGIN; SET LOCAL ROLE authenticated; SELECT att.as_user('00000000-0000-4000-8000-a10000000001');
SELECT kizunasync.attachment_confirm('photos', 'a.jpg', repeat('ab', 32), 1, NULL);
ROLLBACK;
BEGIN; SET LOCAL ROLE authenticated; SELECT att.as_user('00000000-0000-4000-8000-a10000000001');
SELECT kizunasync.attachment_confirm('photos', '00000000-0000-4000-8000-a10000000001/x/a.jpg', 'abc', 1, NULL);
ROLLBACK;
BEGIN; SET LOCAL ROLE authenticated; SELECT att.as_user('00000000-0000-4000-8000-a10000000001');
SELECT kizunasync.attachment_confirm('photos', '00000000-0000-4000-8000-a10000000001/x/a.jpg', repeat('ab', 32), -1, NULL);
ROLLBACK;
BEGIN; SET LOCAL ROLE authenticated; SELECT att.as_user('00000000-0000-4000-8000-a10000000001');
SELECT kizunasync.attachment_confirm(NULL, '00000000-0000-4000-8000-a10000000001/x/a.jpg', repeat('ab', 32), 1, NULL);
ROLLBACK;
BEGIN; SET LOCAL ROLE authenticated; SELECT att.as_user('00000000-0000-4000-8000-a10000000001');
SELECT kizunasync.attachment_confirm('photos', '00000000-0000-4000-8000-a10000000001/x/a.jpg', repeat('ab', 32), 1, NULL, 'no_such_table');
ROLLBACK;
-- another user's folder
BEGIN; SET LOCAL ROLE authenticated; SELECT att.as_user('00000000-0000-4000-8000-a10000000002');
SELECT kizunasync.attachment_confirm('photos', '00000000-0000-4000-8000-a10000000001/00000000-0000-4000-8000-e10000000001/a.jpg',
  repeat('ab', 32), 1234, 'image/jpeg');
ROLLBACK;
-- an object the caller did not upload (uploaded with the service key)
BEGIN; SET LOCAL ROLE authenticated; SELECT att.as_user('00000000-0000-4000-8000-a10000000001');
SELECT kizunasync.attachment_confirm('photos', '00000000-0000-4000-8000-a10000000001/00000000-0000-4000-8000-e10000000001/by-service.jpg',
  repeat('ab', 32), 1, NULL);
ROLLBACK;
-- the owning row is not readable by the caller (it is user B's row)
BEGIN; SET LOCAL ROLE authenticated; SELECT att.as_user('00000000-0000-4000-8000-a10000000001');
SELECT kizunasync.attachment_confirm('photos', '00000000-0000-4000-8000-a10000000001/00000000-0000-4000-8000-e10000000003/c.jpg',
  repeat('ab', 32), 1, NULL, 'att_notes');
ROLLBACK;
-- no JWT subject at all
BEGIN; SET LOCAL ROLE authenticated;
SELECT kizunasync.attachment_confirm('photos', '00000000-0000-4000-8000-a10000000001/x/a.jpg', repeat('ab', 32), 1, NULL);
ROLLBACK;
-- anon may not call it
BEGIN; SET LOCAL ROLE anon;
SELECT kizunasync.attachment_confirm('photos', '00000000-0000-4000-8000-a10000000001/x/a.jpg', repeat('ab', 32), 1, NULL);
ROLLBACK;

-- metadata for another user: visible only with the owning row and the object readable
BEGIN; SET LOCAL ROLE authenticated; SELECT att.as_user('00000000-0000-4000-8000-a10000000001');
SELECT kizunasync.attachment_confirm('photos', '00000000-0000-4000-8000-a10000000001/00000000-0000-4000-8000-e10000000002/b.jpg',
  repeat('0f', 32), 99, 'image/png', 'att_notes');
COMMIT;
BEGIN; SET LOCAL ROLE authenticated; SELECT att.as_user('00000000-0000-4000-8000-a10000000002');
-- private row of A: nothing
SELECT count(*) AS b_sees_private FROM kizunasync.attachment_metadata('photos', '00000000-0000-4000-8000-a10000000001/00000000-0000-4000-8000-e10000000001/a.jpg');
-- shared row and shared object: visible
SELECT size, media_type FROM kizunasync.attachment_metadata('photos', '00000000-0000-4000-8000-a10000000001/00000000-0000-4000-8000-e10000000002/b.jpg');
-- unknown object: nothing, no error
SELECT count(*) AS unknown FROM kizunasync.attachment_metadata('photos', 'nope/nope/x');
ROLLBACK;

-- vacuum: silent; forgets metadata only once the object is gone, and only the caller's
BEGIN; SET LOCAL ROLE authenticated; SELECT att.as_user('00000000-0000-4000-8000-a10000000001');
SELECT kizunasync.attachment_vacuum('photos', '00000000-0000-4000-8000-a10000000001/00000000-0000-4000-8000-e10000000001/a.jpg');
COMMIT;
SELECT count(*) AS kept_while_object_exists FROM kizunasync.attachments;
DELETE FROM storage.objects WHERE name LIKE '%/a.jpg';
BEGIN; SET LOCAL ROLE authenticated; SELECT att.as_user('00000000-0000-4000-8000-a10000000002');
SELECT kizunasync.attachment_vacuum('photos', '00000000-0000-4000-8000-a10000000001/00000000-0000-4000-8000-e10000000001/a.jpg');
COMMIT;
SELECT count(*) AS kept_for_other_user FROM kizunasync.attachments;
BEGIN; SET LOCAL ROLE authenticated; SELECT att.as_user('00000000-0000-4000-8000-a10000000001');
SELECT kizunasync.attachment_vacuum('photos', '00000000-0000-4000-8000-a10000000001/00000000-0000-4000-8000-e10000000001/a.jpg');
COMMIT;
SELECT object_path FROM kizunasync.attachments;

-- without Supabase Storage: a clear error naming what is missing
BEGIN;
ALTER SCHEMA storage RENAME TO storage_away;
SET LOCAL ROLE authenticated; SELECT att.as_user('00000000-0000-4000-8000-a10000000001');
SELECT kizunasync.attachment_confirm('photos', '00000000-0000-4000-8000-a10000000001/x/a.jpg', repeat('ab', 32), 1, NULL);
ROLLBACK;

-- clean up
SET client_min_messages = warning;
TRUNCATE kizunasync.attachments;
DELETE FROM storage.objects;
DELETE FROM storage.buckets;
DROP POLICY read_objects ON storage.objects;
SELECT kizunasync.unsync_table('att.notes');
DROP SCHEMA att CASCADE;
RESET client_min_messages;
