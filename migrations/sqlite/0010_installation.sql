-- The installation this database belongs to: one row, written once by the first process that
-- finds neither it nor the blob store's marker (bindery/installation.json), which carries the
-- same id. A process refuses to start when the two differ, so a new or wrong database is never
-- paired with another installation's books (and the blob sweep never takes them for orphans).
-- `bindery storage adopt --yes` is the one thing that changes the id afterwards.
-- singleton keeps it to one row. created_at is unix milliseconds from the database's clock.
CREATE TABLE installation (
    singleton  INTEGER NOT NULL PRIMARY KEY DEFAULT 1 CHECK (singleton = 1),
    id         TEXT    NOT NULL,
    created_at INTEGER NOT NULL
);
