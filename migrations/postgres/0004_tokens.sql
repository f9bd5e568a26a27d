-- API tokens: one row per token, and each token is a tenant. A person's label (`name`) is
-- also the tenant name, so books and jobs a token creates belong to it. The token itself is
-- shown once, when it is created; only its SHA-256 (lowercase hex) is kept, and a request is
-- authenticated by looking that hash up.
--
-- admin: true for a token that may act across tenants.
-- A revoked token keeps its row (revoked_at set), so its name is never reused.
-- last_used_at is refreshed at most once a minute, so authenticating is a read, not a write.
-- Times are unix milliseconds from the database's clock.
CREATE TABLE tokens (
    name         TEXT    PRIMARY KEY,
    tenant       TEXT    NOT NULL,
    hash         TEXT    NOT NULL UNIQUE,
    admin        BOOLEAN NOT NULL DEFAULT false,
    created_at   BIGINT  NOT NULL,
    last_used_at BIGINT,
    revoked_at   BIGINT
);
