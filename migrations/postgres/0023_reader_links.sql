-- Advance-reader links (src/advance_copies/links.rs): a link an author makes for one named
-- reader of one book, with an expiry, a download limit and the formats it offers. Only the
-- SHA-256 of the link's secret is kept; id (a UUID) is also the identifier stamped in the
-- reader's copies (urn:uuid:ID), so a leaked copy names its link. formats is a comma list of
-- reader, epub and pdf. opens and downloads count what the reader did. Expand only.
CREATE TABLE reader_links (
    id            TEXT    PRIMARY KEY,
    hash          TEXT    NOT NULL UNIQUE,
    tenant        TEXT    NOT NULL,
    book_id       TEXT    NOT NULL,
    reader        TEXT    NOT NULL,
    formats       TEXT    NOT NULL,
    expires_at    BIGINT NOT NULL,
    max_downloads BIGINT NOT NULL,
    downloads     BIGINT NOT NULL DEFAULT 0,
    opens         BIGINT NOT NULL DEFAULT 0,
    created_by    TEXT    NOT NULL,
    created_at    BIGINT NOT NULL,
    revoked_at    BIGINT
);
CREATE INDEX reader_links_book ON reader_links (tenant, book_id, created_at);
