-- Every web and worker process's log events, at the level RUST_LOG lets through, so that
-- `bindery logs` shows all processes on all machines as one stream. Written in batches by a
-- task of each process (src/logbook/); pruned by SCHEDULE_PRUNE_LOGS to LOG_RETENTION and
-- LOG_MAX_LINES. `at` is unix microseconds from the writing process's clock: the time the
-- event happened, which is what a reader merges by.
CREATE TABLE log_lines (
    id         INTEGER PRIMARY KEY,
    at         INTEGER  NOT NULL,
    -- 1 error, 2 warn, 3 info, 4 debug, 5 trace
    level      INTEGER  NOT NULL,
    role       TEXT     NOT NULL,
    host       TEXT     NOT NULL,
    pid        INTEGER  NOT NULL,
    target     TEXT     NOT NULL,
    message    TEXT     NOT NULL,
    -- The event's other fields, a JSON object.
    fields     TEXT     NOT NULL,
    request_id TEXT,
    book_id    TEXT,
    job_id     INTEGER,
    tenant     TEXT
);
CREATE INDEX log_lines_at ON log_lines (at);
CREATE INDEX log_lines_book ON log_lines (book_id, at) WHERE book_id IS NOT NULL;
CREATE INDEX log_lines_job ON log_lines (job_id) WHERE job_id IS NOT NULL;
