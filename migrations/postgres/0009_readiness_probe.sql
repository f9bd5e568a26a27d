-- One row that /readyz rewrites to prove the database accepts a write that reaches the disk
-- (a full disk or a read-only server still answers SELECT 1). Nothing else reads it.
CREATE TABLE readiness_probe (
    id BIGINT PRIMARY KEY,
    at BIGINT NOT NULL
);
