-- Schema 8: when a package's files last settled on disk. A file row whose
-- disk size, inode and modification time are known and whose change time
-- is NULL was written with the size, inode and time of the file staged,
-- whose rename into place (after the commit) changes its change time: it
-- still looks as installed while its change time is at most the
-- package's disk_settled_ns, a time taken once every rename of the
-- transaction that installed it was done (and a clock tick had passed).
-- So the transaction writes no file row a second time after its renames:
-- one package row records them all. NULL: nothing settled yet (a crash
-- before it was written), and such files are hashed instead.

ALTER TABLE packages ADD COLUMN disk_settled_ns INTEGER;
