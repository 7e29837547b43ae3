-- Schema 2: indexes for the history queries of fatelfd.
-- The history grows by one row per transaction and is never pruned, so
-- "history PKG" (newest first, with a limit) reads the package's rows from
-- an index instead of scanning every row, and recovery at startup finds the
-- few pending rows without reading the finished ones.

CREATE INDEX transactions_package ON transactions(package, id);
CREATE INDEX transactions_pending ON transactions(id) WHERE state = 'pending';
