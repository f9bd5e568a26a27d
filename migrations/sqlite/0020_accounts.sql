-- People and their credentials (src/accounts/). Expand only: the previous release reads none of
-- these tables, and its sessions (made with a token) keep working through the rebuilt
-- `sessions`, which it reads and writes as before.
--
-- accounts: a person in a tenant. id is a UUID, also the WebAuthn user handle. email_key is the
-- address lowercased, unique across the installation, so one address is one person. role:
-- 'admin' (the whole installation), 'owner' (the tenant, its people and invitations) or
-- 'author' (the tenant's books). password_hash is an argon2id PHC string, NULL without a
-- password; totp_secret the base32 secret of a confirmed second factor, and totp_step the
-- time step of the last code accepted, so that a code works once. A disabled account
-- keeps its row, so its address is not taken by someone else by accident.
CREATE TABLE accounts (
    id            TEXT    PRIMARY KEY,
    tenant        TEXT    NOT NULL,
    name          TEXT    NOT NULL,
    email         TEXT    NOT NULL,
    email_key     TEXT    NOT NULL UNIQUE,
    role          TEXT    NOT NULL CHECK (role IN ('admin', 'owner', 'author')),
    password_hash TEXT,
    totp_secret   TEXT,
    totp_step     INTEGER,
    created_at    INTEGER NOT NULL,
    disabled_at   INTEGER
);
CREATE INDEX accounts_tenant ON accounts (tenant);

-- passkeys: WebAuthn credentials, several per account. id is the credential id (base64url),
-- passkey the library's credential record (JSON: public key, counter, flags).
CREATE TABLE passkeys (
    id           TEXT    PRIMARY KEY,
    account_id   TEXT    NOT NULL REFERENCES accounts (id),
    name         TEXT    NOT NULL,
    passkey      TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER
);
CREATE INDEX passkeys_account ON passkeys (account_id);

-- invitations: a link that makes an account of `role` in `tenant`. Only the SHA-256 of the
-- link's secret is kept; id is a short public name to list and revoke it by. uses counts the
-- accounts made with it, at most max_uses.
CREATE TABLE invitations (
    id         TEXT    PRIMARY KEY,
    hash       TEXT    NOT NULL UNIQUE,
    tenant     TEXT    NOT NULL,
    role       TEXT    NOT NULL CHECK (role IN ('admin', 'owner', 'author')),
    email      TEXT,
    note       TEXT    NOT NULL DEFAULT '',
    created_by TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    max_uses   INTEGER NOT NULL,
    uses       INTEGER NOT NULL DEFAULT 0,
    revoked_at INTEGER
);
CREATE INDEX invitations_tenant ON invitations (tenant, created_at);

-- ceremonies: what a sign-in or a registration in several requests remembers between them (a
-- WebAuthn challenge, a password accepted but awaiting its TOTP code, an OpenID Connect
-- request's state, nonce and PKCE verifier), by the SHA-256 of a random cookie value. Used
-- once, and gone when expired.
CREATE TABLE ceremonies (
    hash       TEXT    PRIMARY KEY,
    kind       TEXT    NOT NULL,
    state      TEXT    NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE INDEX ceremonies_expires_at ON ceremonies (expires_at);

-- sign_in_failures: wrong passwords (and TOTP codes) counted per fixed window, by key:
-- 'email:ADDRESS' whether or not such an account exists, and 'address:IP'.
CREATE TABLE sign_in_failures (
    key          TEXT    PRIMARY KEY,
    window_start INTEGER NOT NULL,
    failures     INTEGER NOT NULL
);

-- API tokens made on an account's page belong to it, and end with it.
ALTER TABLE tokens ADD COLUMN account_id TEXT REFERENCES accounts (id);

-- A session now acts for a token (as before) or for an account: token_name becomes optional,
-- which SQLite can only do by rebuilding the table. `credential` says what it was made with
-- ('token', 'password', 'passkey:ID', 'oidc'), so removing that credential ends it.
CREATE TABLE sessions_new (
    hash       TEXT    PRIMARY KEY,
    token_name TEXT    REFERENCES tokens (name),
    account_id TEXT    REFERENCES accounts (id),
    credential TEXT    NOT NULL DEFAULT 'token',
    csrf       TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    CHECK ((token_name IS NULL) <> (account_id IS NULL))
);
INSERT INTO sessions_new (hash, token_name, csrf, created_at, expires_at)
    SELECT hash, token_name, csrf, created_at, expires_at FROM sessions;
DROP TABLE sessions;
ALTER TABLE sessions_new RENAME TO sessions;
CREATE INDEX sessions_expires_at ON sessions (expires_at);
CREATE INDEX sessions_account ON sessions (account_id);
