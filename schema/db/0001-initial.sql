-- Schema 1 of the fatelfd installed-file database.
-- Never edit this file once shipped: add schema/db/0002-*.sql instead.

CREATE TABLE packages (
	id            INTEGER PRIMARY KEY,
	name          TEXT NOT NULL UNIQUE CHECK (length(name) > 0),
	version       TEXT NOT NULL,
	summary       TEXT NOT NULL DEFAULT '',
	vendor        TEXT NOT NULL DEFAULT '',
	signer_keyid  TEXT,
	installed_at  INTEGER NOT NULL,
	policy        TEXT NOT NULL
);

-- The path is the primary key: a second package that claims it is a
-- constraint violation, found by the database rather than by a scan.
CREATE TABLE files (
	path              TEXT PRIMARY KEY CHECK (substr(path, 1, 1) = '/'),
	package_id        INTEGER NOT NULL REFERENCES packages(id) ON DELETE CASCADE,
	type              TEXT NOT NULL CHECK (type IN ('file', 'symlink')),
	mode              INTEGER NOT NULL CHECK (mode >= 0 AND mode <= 4095),
	size              INTEGER NOT NULL DEFAULT 0 CHECK (size >= 0),
	sha256            TEXT,
	link_target       TEXT,
	config            INTEGER NOT NULL DEFAULT 0 CHECK (config IN (0, 1)),
	kind              TEXT NOT NULL DEFAULT 'data' CHECK (kind IN ('data', 'elf', 'fatelf')),
	installed_form    TEXT NOT NULL DEFAULT 'as-shipped' CHECK (installed_form IN ('as-shipped', 'thinned')),
	installed_size    INTEGER NOT NULL DEFAULT 0 CHECK (installed_size >= 0),
	installed_sha256  TEXT,
	CHECK ((type = 'symlink') = (link_target IS NOT NULL))
);
CREATE INDEX files_package ON files(package_id);

-- The FatELF records of a fat file as shipped; kept says whether the
-- installed file still holds the record.
CREATE TABLE records (
	path           TEXT NOT NULL REFERENCES files(path) ON DELETE CASCADE,
	idx            INTEGER NOT NULL CHECK (idx >= 0),
	target         TEXT NOT NULL,
	machine        INTEGER NOT NULL,
	osabi          INTEGER NOT NULL,
	osabi_version  INTEGER NOT NULL,
	word_size      INTEGER NOT NULL CHECK (word_size IN (1, 2)),
	byte_order     INTEGER NOT NULL CHECK (byte_order IN (1, 2)),
	offset         INTEGER NOT NULL CHECK (offset >= 0),
	size           INTEGER NOT NULL CHECK (size >= 0),
	sha256         TEXT NOT NULL,
	kept           INTEGER NOT NULL DEFAULT 1 CHECK (kept IN (0, 1)),
	PRIMARY KEY (path, idx)
);

CREATE TABLE dirs (
	path        TEXT NOT NULL CHECK (substr(path, 1, 1) = '/'),
	package_id  INTEGER NOT NULL REFERENCES packages(id) ON DELETE CASCADE,
	PRIMARY KEY (path, package_id)
);
CREATE INDEX dirs_package ON dirs(package_id);

-- History: one row per mutating transaction, kept after the package goes.
CREATE TABLE transactions (
	id             INTEGER PRIMARY KEY,
	kind           TEXT NOT NULL CHECK (kind IN ('install', 'upgrade', 'remove', 'thin')),
	package        TEXT,
	old_version    TEXT,
	new_version    TEXT,
	state          TEXT NOT NULL DEFAULT 'pending'
	               CHECK (state IN ('pending', 'committed', 'rolled-back', 'failed')),
	started_at     INTEGER NOT NULL,
	finished_at    INTEGER,
	bytes_written  INTEGER NOT NULL DEFAULT 0 CHECK (bytes_written >= 0),
	bytes_saved    INTEGER NOT NULL DEFAULT 0,
	error          TEXT,
	CHECK ((state = 'pending') = (finished_at IS NULL))
);

-- Crash recovery: each staged file operation of a pending transaction, so
-- that a restart can finish or roll it back.
CREATE TABLE journal (
	txid         INTEGER NOT NULL REFERENCES transactions(id) ON DELETE CASCADE,
	seq          INTEGER NOT NULL CHECK (seq >= 0),
	op           TEXT NOT NULL CHECK (op IN ('create', 'replace', 'remove', 'mkdir', 'rmdir')),
	path         TEXT NOT NULL,
	temp_path    TEXT,
	backup_path  TEXT,
	state        TEXT NOT NULL DEFAULT 'staged' CHECK (state IN ('staged', 'done', 'undone')),
	PRIMARY KEY (txid, seq)
);
