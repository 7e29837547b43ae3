-- Schema 9: holds. A held package stays at its installed version:
-- 'fatelfctl upgrade' skips it, and an install of another version of it is
-- refused unless forced. A hold belongs to the installed package and goes
-- with it when the package is removed; an upgrade keeps the packages row,
-- and so the hold.

CREATE TABLE holds (
	package_id  INTEGER PRIMARY KEY REFERENCES packages(id) ON DELETE CASCADE,
	held_at     INTEGER NOT NULL
);
