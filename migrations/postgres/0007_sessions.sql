-- Browser sessions: signing in with an API token sets a cookie holding a random session id;
-- only its SHA-256 (lowercase hex) is kept. A session acts as its token, so revoking the token
-- ends every session made with it. csrf is the per-session token that forms and the pages'
-- scripts send back with every write. Times are unix milliseconds from the database's clock.
CREATE TABLE sessions (
    hash       TEXT    PRIMARY KEY,
    token_name TEXT    NOT NULL REFERENCES tokens (name),
    csrf       TEXT    NOT NULL,
    created_at BIGINT  NOT NULL,
    expires_at BIGINT  NOT NULL
);
CREATE INDEX sessions_expires_at ON sessions (expires_at);
