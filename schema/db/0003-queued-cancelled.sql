-- Schema 3: a history row for every job from the moment it is queued.
-- fatelfd gives a mutating call its transaction id when it accepts it:
-- the row is 'queued' until the job starts (then 'pending', as before), and
-- a job cancelled by request ends 'cancelled', whether it had started or
-- not. 'rolled-back' stays for what recovery undid at a start.
-- SQLite cannot change a CHECK constraint, so the table is built again;
-- the journal, which refers to it, is set aside and put back around it.

CREATE TEMP TABLE journal_saved AS SELECT * FROM journal;
DROP TABLE journal;
ALTER TABLE transactions RENAME TO transactions_2;

CREATE TABLE transactions (
	id             INTEGER PRIMARY KEY,
	kind           TEXT NOT NULL CHECK (kind IN ('install', 'upgrade', 'remove', 'thin')),
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
INSERT INTO transactions SELECT * FROM transactions_2;
DROP TABLE transactions_2;
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
