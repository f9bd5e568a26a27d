-- Tenants (imprints): one row per tenant, once it is used, holding what belongs to the tenant
-- rather than to one of its tokens: its webhook signing secrets. A tenant made by an
-- invitation alone has no token to hold them. A tenant from before this table gets its row on
-- first use with the secrets its oldest token held (src/tenants.rs), so nothing is copied
-- here. Expand only: the previous release keeps reading the tokens' columns, which new tokens
-- still get.
CREATE TABLE tenants (
    name                          TEXT    PRIMARY KEY,
    created_at                    BIGINT NOT NULL,
    webhook_secret                TEXT    NOT NULL,
    previous_webhook_secret       TEXT,
    previous_webhook_secret_until BIGINT
);
