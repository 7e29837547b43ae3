-- Schema 6: what an installed file looked like on disk right after the
-- engine put it there (size, inode, and modification and change times in
-- nanoseconds), so that an upgrade can tell cheaply that a file it would
-- write again is still the one it installed. NULL: not known (a row from
-- before this schema, or one whose file was never stat'ed after its
-- rename); the upgrade then hashes the file instead.

ALTER TABLE files ADD COLUMN disk_size INTEGER CHECK (disk_size >= 0);
ALTER TABLE files ADD COLUMN disk_ino INTEGER;
ALTER TABLE files ADD COLUMN disk_mtime_ns INTEGER;
ALTER TABLE files ADD COLUMN disk_ctime_ns INTEGER;
