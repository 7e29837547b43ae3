-- Schema 11: dependencies. Each installed package's depends entries, as
-- its manifest declares them (doc/fatbundle.md): the name of the package
-- it needs and the constraint, "OP VERSION" with a dpkg operator, or ''
-- for any version. Written when the package's install commits (an
-- upgrade replaces them); they go with the package. Removing a package
-- that another installed one names here is refused unless both go in one
-- transaction.
--
-- packages.automatic is 1 for a package installed only because another
-- one needed it (fatelfctl install NAME pulling it from a repository),
-- 0 for one asked for by name or file.

CREATE TABLE depends (
	package_id  INTEGER NOT NULL REFERENCES packages(id) ON DELETE CASCADE,
	name        TEXT NOT NULL CHECK (name <> ''),
	constraint_text TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (package_id, name)
);
CREATE INDEX depends_by_name ON depends(name);

ALTER TABLE packages ADD COLUMN automatic INTEGER NOT NULL DEFAULT 0 CHECK (automatic IN (0, 1));
