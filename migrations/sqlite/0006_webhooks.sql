-- Webhooks: a book may name a `callback_url`; when it becomes ready or fails, Bindery POSTs a
-- signed JSON event there. Each event is one row here (its id is the delivery id receivers
-- dedupe on) and one `webhook.deliver` job that retries it; both are written in the transaction
-- that changes the book's status, so an event exists if and only if the change does.
ALTER TABLE books ADD COLUMN callback_url TEXT;

-- The tenant's signing secret (`whsec_` and 32 random bytes in hex). Unlike the token it is
-- kept in clear: Bindery must sign with it. Rows from before this migration get one on first use.
ALTER TABLE tokens ADD COLUMN webhook_secret TEXT;

-- body: the exact JSON sent with every attempt, fixed when the event happened.
-- delivered_at/response_status: set when the receiver answered 2xx; the job's own row holds
-- attempts and errors. Times are unix milliseconds from the database's clock.
CREATE TABLE webhook_deliveries (
    id              TEXT    PRIMARY KEY,
    book_id         TEXT    NOT NULL REFERENCES books (id) ON DELETE CASCADE,
    tenant          TEXT    NOT NULL,
    event           TEXT    NOT NULL,
    url             TEXT    NOT NULL,
    body            TEXT    NOT NULL,
    job_id          INTEGER NOT NULL,
    created_at      INTEGER NOT NULL,
    delivered_at    INTEGER,
    response_status INTEGER
);

CREATE INDEX webhook_deliveries_book ON webhook_deliveries (book_id, created_at);
