-- Rotating a tenant's webhook secret keeps the old one signing too, for a while: each delivery
-- then carries two v1 signatures (new and old), so a receiver can switch to the new secret
-- without refusing a single event. previous_webhook_secret_until is unix milliseconds from the
-- database's clock; past it the old secret is ignored.
ALTER TABLE tokens ADD COLUMN previous_webhook_secret TEXT;
ALTER TABLE tokens ADD COLUMN previous_webhook_secret_until BIGINT;
