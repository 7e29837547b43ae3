-- Schema 10: what "fatelfctl info" tells of a package besides its name
-- and version: the license and homepage its manifest declares, the
-- targets the bundle covers (their names, comma-separated, sorted as the
-- manifest lists them), and where it was installed from: source_type
-- 'file' (a bundle file: its path, as the caller named it), 'url' (the
-- URL, without user:password@), 'repository' (the configured repository's
-- name), 'registry' (the OCI reference, oci://HOST/NAME:TAG or @sha256:)
-- or 'fd' (a descriptor passed without a name, such as a pipe). NULL for
-- a package installed before this schema: not known.

ALTER TABLE packages ADD COLUMN license TEXT;
ALTER TABLE packages ADD COLUMN homepage TEXT;
ALTER TABLE packages ADD COLUMN targets TEXT;
ALTER TABLE packages ADD COLUMN source_type TEXT
	CHECK (source_type IS NULL OR source_type = 'file' OR source_type = 'url' OR
	       source_type = 'repository' OR source_type = 'registry' OR source_type = 'fd');
ALTER TABLE packages ADD COLUMN source TEXT CHECK ((source IS NULL) = (source_type IS NULL));
