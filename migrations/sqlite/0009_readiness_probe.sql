-- One row that /readyz rewrites to prove the database accepts a write that reaches the disk
-- (a full disk or a read-only file still answers SELECT 1). Nothing else reads it.
CREATE TABLE readiness_probe (
    id INTEGER PRIMARY KEY NOT NULL,
    at INTEGER NOT NULL
) STRICT;
