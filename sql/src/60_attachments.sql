-- ---------------------------------------------------------------------------
-- Attachments: integrity metadata around Supabase Storage objects.  Object
-- bytes never ride pull or push.  The object key convention is
-- <owner>/<row key>/<file name>, the owner being the uploader's JWT sub.
-- The table (kizunasync.attachments, sql/src/00_schema.sql) is private;
-- clients use the three functions (SECURITY INVOKER), which check the
-- caller's own policies on the owning row and on storage.objects.
-- ---------------------------------------------------------------------------
CREATE OR REPLACE FUNCTION kizunasync.attachment_confirm(p_bucket text, p_path text, p_sha256 text,
											  p_size bigint, p_media_type text,
											  p_table text DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'kz_attachment_confirm'
LANGUAGE C VOLATILE;

CREATE OR REPLACE FUNCTION kizunasync.attachment_metadata(p_bucket_id text, p_object_path text)
RETURNS TABLE (sha256 text, size bigint, media_type text,
			   created_at timestamptz, updated_at timestamptz)
AS 'MODULE_PATHNAME', 'kz_attachment_metadata'
LANGUAGE C STABLE;

CREATE OR REPLACE FUNCTION kizunasync.attachment_vacuum(p_bucket text, p_path text)
RETURNS void
AS 'MODULE_PATHNAME', 'kz_attachment_vacuum'
LANGUAGE C VOLATILE;
