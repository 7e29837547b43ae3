-- Schema 7: the same tables and constraints, with each closed set of
-- values checked by plain comparisons. SQLite evaluates `x IN (...)` in a
-- CHECK by building a small temporary table for every row it writes,
-- which made the check cost more than the row itself: about 1.3 us a row
-- for the journal and more for files, each time a package of tens of
-- thousands of files is installed or removed. What each column accepts
-- is unchanged. SQLite cannot change a CHECK constraint, so the tables
-- are built again; the files' records, which refer to them, are set
-- aside and put back around them, as the journal is in schema 5.

CREATE TEMP TABLE records_saved AS SELECT * FROM records;
DROP TABLE records;
ALTER TABLE files RENAME TO files_6;

CREATE TABLE files (
	path              TEXT PRIMARY KEY CHECK (substr(path, 1, 1) = '/'),
	package_id        INTEGER NOT NULL REFERENCES packages(id) ON DELETE CASCADE,
	type              TEXT NOT NULL CHECK (type = 'file' OR type = 'symlink'),
	mode              INTEGER NOT NULL CHECK (mode >= 0 AND mode <= 4095),
	size              INTEGER NOT NULL DEFAULT 0 CHECK (size >= 0),
	sha256            TEXT,
	link_target       TEXT,
	config            INTEGER NOT NULL DEFAULT 0 CHECK (config = 0 OR config = 1),
	kind              TEXT NOT NULL DEFAULT 'data'
	                  CHECK (kind = 'data' OR kind = 'elf' OR kind = 'fatelf'),
	installed_form    TEXT NOT NULL DEFAULT 'as-shipped'
	                  CHECK (installed_form = 'as-shipped' OR installed_form = 'thinned'),
	installed_size    INTEGER NOT NULL DEFAULT 0 CHECK (installed_size >= 0),
	installed_sha256  TEXT,
	disk_size         INTEGER CHECK (disk_size >= 0),
	disk_ino          INTEGER,
	disk_mtime_ns     INTEGER,
	disk_ctime_ns     INTEGER,
	CHECK ((type = 'symlink') = (link_target IS NOT NULL))
);
INSERT INTO files SELECT * FROM files_6;
DROP TABLE files_6;
CREATE INDEX files_package ON files(package_id);

CREATE TABLE records (
	path           TEXT NOT NULL REFERENCES files(path) ON DELETE CASCADE,
	idx            INTEGER NOT NULL CHECK (idx >= 0),
	target         TEXT NOT NULL,
	machine        INTEGER NOT NULL,
	osabi          INTEGER NOT NULL,
	osabi_version  INTEGER NOT NULL,
	word_size      INTEGER NOT NULL CHECK (word_size = 1 OR word_size = 2),
	byte_order     INTEGER NOT NULL CHECK (byte_order = 1 OR byte_order = 2),
	offset         INTEGER NOT NULL CHECK (offset >= 0),
	size           INTEGER NOT NULL CHECK (size >= 0),
	sha256         TEXT NOT NULL,
	kept           INTEGER NOT NULL DEFAULT 1 CHECK (kept = 0 OR kept = 1),
	PRIMARY KEY (path, idx)
);
INSERT INTO records SELECT * FROM records_saved;
DROP TABLE records_saved;

CREATE TEMP TABLE journal_saved AS SELECT * FROM journal;
DROP TABLE journal;
CREATE TABLE journal (
	txid         INTEGER NOT NULL REFERENCES transactions(id) ON DELETE CASCADE,
	seq          INTEGER NOT NULL CHECK (seq >= 0),
	op           TEXT NOT NULL
	             CHECK (op = 'create' OR op = 'replace' OR op = 'remove' OR op = 'mkdir' OR
	                    op = 'rmdir'),
	path         TEXT NOT NULL,
	temp_path    TEXT,
	backup_path  TEXT,
	state        TEXT NOT NULL DEFAULT 'staged'
	             CHECK (state = 'staged' OR state = 'done' OR state = 'undone'),
	PRIMARY KEY (txid, seq)
);
INSERT INTO journal SELECT * FROM journal_saved;
DROP TABLE journal_saved;
