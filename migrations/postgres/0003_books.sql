-- Books: one row per uploaded manuscript. The pipeline's jobs form one workflow whose id is
-- the book's id; large things (the manuscript, the document model, the EPUB) are blobs under
-- books/{id}/, never columns.
--
-- status: processing (its workflow is running), ready (published), failed (a step refused the
-- input or ran out of attempts; error_code/error say why).
-- Times are unix milliseconds from the database's clock.
CREATE TABLE books (
    id          TEXT    PRIMARY KEY,
    tenant      TEXT    NOT NULL DEFAULT '',
    file_name   TEXT    NOT NULL,
    -- User-supplied metadata overrides and options, as JSON.
    options     TEXT    NOT NULL DEFAULT '{}',
    status      TEXT    NOT NULL DEFAULT 'processing',
    title       TEXT,
    authors     TEXT,
    format      TEXT,
    -- The book's report (warnings, statistics, timings), as JSON, once published.
    report      TEXT,
    error_code  TEXT,
    error       TEXT,
    epub_bytes  BIGINT,
    created_at  BIGINT  NOT NULL,
    updated_at  BIGINT  NOT NULL,
    published_at BIGINT
);

CREATE INDEX books_tenant ON books (tenant, created_at DESC);
