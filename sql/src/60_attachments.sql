-- ---------------------------------------------------------------------------
-- Attachments: integrity metadata around Supabase Storage objects.  Object
-- bytes never ride pull or push.  The object key convention is
-- <owner>/<row key>/<file name>, the owner being the uploader's JWT sub.
-- The table is private; clients use the three functions (SECURITY INVOKER),
-- which check the caller's own policies on the owning row and on
-- storage.objects.
-- ---------------------------------------------------------------------------
CREATE TABLE kizunasync.attachments (
	id            uuid PRIMARY KEY DEFAULT pg_catalog.gen_random_uuid(),
	bucket_id     text COLLATE "C" NOT NULL,
	object_path   text COLLATE "C" NOT NULL,
	sha256        text CHECK (sha256 ~ '^[0-9a-f]{64}$'),
	size          bigint CHECK (size >= 0),
	media_type    text,
	created_by    text COLLATE "C" NOT NULL,
	table_name    text COLLATE "C",
	created_at    timestamptz NOT NULL DEFAULT now(),
	updated_at    timestamptz NOT NULL DEFAULT now(),
	UNIQUE (bucket_id, object_path)
);
SELECT pg_catalog.pg_extension_config_dump('kizunasync.attachments', '');

CREATE FUNCTION kizunasync.attachment_confirm(p_bucket text, p_path text, p_sha256 text,
											  p_size bigint, p_media_type text,
											  p_table text DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'kz_attachment_confirm'
LANGUAGE C VOLATILE;

CREATE FUNCTION kizunasync.attachment_metadata(p_bucket_id text, p_object_path text)
RETURNS TABLE (sha256 text, size bigint, media_type text,
			   created_at timestamptz, updated_at timestamptz)
AS 'MODULE_PATHNAME', 'kz_attachment_metadata'
LANGUAGE C STABLE;

CREATE FUNCTION kizunasync.attachment_vacuum(p_bucket text, p_path text)
RETURNS void
AS 'MODULE_PATHNAME', 'kz_attachment_vacuum'
LANGUAGE C VOLATILE;
