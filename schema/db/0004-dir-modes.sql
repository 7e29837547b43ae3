-- Schema 4: the mode each directory had when its package was installed,
-- so that verify can tell when someone loosened it. NULL for directories
-- recorded before: verify then checks only their type and owner.

ALTER TABLE dirs ADD COLUMN mode INTEGER CHECK (mode IS NULL OR (mode >= 0 AND mode <= 4095));
