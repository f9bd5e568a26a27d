-- Single sign-on: the OpenID Connect identity an account signs in with, as `ISSUER SUBJECT`
-- (a provider's subject is unique only within its issuer). NULL for an account that has not
-- signed in that way. Expand only.
ALTER TABLE accounts ADD COLUMN oidc_subject TEXT;
CREATE UNIQUE INDEX accounts_oidc_subject ON accounts (oidc_subject);
