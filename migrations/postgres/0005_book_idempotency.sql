-- An upload retried with the same Idempotency-Key returns the book the first one made. The key
-- is the client's, so it is unique per tenant, not globally.
ALTER TABLE books ADD COLUMN idempotency_key TEXT;

CREATE UNIQUE INDEX books_idempotency ON books (tenant, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
