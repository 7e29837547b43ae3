-- Schema 5: an install's history row says what it did to the package:
-- 'install', 'upgrade', 'reinstall' (the same version again) or
-- 'downgrade' (an older version, with allow_downgrade). Before, a reinstall
-- and a downgrade were both recorded as 'upgrade'; the rows whose two
-- versions are the same were reinstalls and say so now. An older row that
-- went down in version stays 'upgrade': SQL cannot compare versions.
-- SQLite cannot change a CHECK constraint, so the table is built again,
-- with the journal set aside and put back around it, as in schema 3.

CREATE TEMP TABLE journal_saved AS SELECT * FROM journal;
DROP TABLE journal;
ALTER TABLE transactions RENAME TO transactions_4;

CREATE TABLE transactions (
	id             INTEGER PRIMARY KEY,
	kind           TEXT NOT NULL
	               CHECK (kind IN ('install', 'upgrade', 'reinstall', 'downgrade', 'remove',
	                               'thin')),
	package        TEXT,
	old_version    TEXT,
	new_version    TEXT,
	state          TEXT NOT NULL DEFAULT 'pending'
	               CHECK (state IN ('queued', 'pending', 'committed', 'rolled-back', 'failed',
	                                'cancelled')),
	started_at     INTEGER NOT NULL,
	finished_at    INTEGER,
	bytes_written  INTEGER NOT NULL DEFAULT 0 CHECK (bytes_written >= 0),
	bytes_saved    INTEGER NOT NULL DEFAULT 0,
	error          TEXT,
	CHECK ((state IN ('queued', 'pending')) = (finished_at IS NULL))
);
INSERT INTO transactions SELECT * FROM transactions_4;
DROP TABLE transactions_4;
UPDATE transactions SET kind = 'reinstall'
	WHERE kind = 'upgrade' AND old_version IS NOT NULL AND old_version = new_version;
CREATE INDEX transactions_package ON transactions(package, id);
CREATE INDEX transactions_pending ON transactions(id) WHERE state = 'pending';
CREATE INDEX transactions_queued ON transactions(id) WHERE state = 'queued';

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
INSERT INTO journal SELECT * FROM journal_saved;
DROP TABLE journal_saved;
