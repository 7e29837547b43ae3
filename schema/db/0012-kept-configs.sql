-- Schema 12: config files kept on disk after their package stopped owning
-- them, what dpkg calls a package's "config-files" state. A removal
-- (without --purge) keeps each config file the admin changed, and an
-- upgrade keeps a changed config file the new version no longer ships;
-- each such file gets a row here, with the bytes the package had put
-- there. A later install of the same package adopts the file as an
-- upgrade would: the admin's copy stays and the new version goes beside
-- it (PATH.fatelf-new). "remove --purge" deletes the files and the rows,
-- also for a package that is no longer installed. A row goes when a
-- package owns the path again.
--
-- A directory of the package that a removal leaves because a kept file
-- is in it gets a row too (type 'dir', no bytes), so that the purge
-- removes it once it is empty, as dpkg's does. Installing the package
-- again drops its directory rows.

CREATE TABLE kept_configs (
	path              TEXT PRIMARY KEY CHECK (substr(path, 1, 1) = '/'),
	type              TEXT NOT NULL DEFAULT 'file' CHECK (type = 'file' OR type = 'dir'),
	package           TEXT NOT NULL CHECK (package <> ''),
	version           TEXT NOT NULL,
	sha256            TEXT,
	installed_sha256  TEXT,
	installed_size    INTEGER NOT NULL DEFAULT 0 CHECK (installed_size >= 0),
	kept_at           INTEGER NOT NULL,
	CHECK ((type = 'dir') = (installed_sha256 IS NULL))
);
CREATE INDEX kept_configs_package ON kept_configs(package);
