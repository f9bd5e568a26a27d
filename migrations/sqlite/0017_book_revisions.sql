-- A book's revisions: each manuscript (with its metadata and cover) given for the book, in
-- order. Revision 1 is the upload that made the book; `POST /api/v1/books/{id}/revisions`
-- adds the next. Each builds through its own workflow (the book's id for revision 1,
-- "{id}/r{n}" after it), and its files are under its own prefix in the blob store
-- (books/{id}/ for revision 1, books/{id}/revisions/{n}/ after it: `books::keys`).
--
-- status: processing (building), ready (built; the book's current revision, or one it had),
-- failed (error_code/error say why), cancelled (a newer revision superseded it while it built;
-- its files are removed).
--
-- The books row stays the book as readers get it: `books.revision` is the revision it shows
-- and serves (the newest ready one; before any is, the newest), and its columns are that
-- revision's. Expand only: the previous release neither reads nor writes these, and its books
-- are revision 1.
CREATE TABLE book_revisions (
    book_id     TEXT    NOT NULL,
    number      INTEGER    NOT NULL,
    status      TEXT    NOT NULL DEFAULT 'processing',
    file_name   TEXT    NOT NULL,
    options     TEXT    NOT NULL DEFAULT '{}',
    title       TEXT,
    author_list TEXT,
    format      TEXT,
    report      TEXT,
    error_code  TEXT,
    error       TEXT,
    epub_bytes  INTEGER,
    pdf_bytes   INTEGER,
    idempotency_key TEXT,
    created_at  INTEGER    NOT NULL,
    updated_at  INTEGER    NOT NULL,
    published_at INTEGER,
    -- When its files were removed: a newer revision superseded it while it built, or it fell
    -- out of the newest REVISIONS_KEPT once a newer one was published.
    files_removed_at INTEGER,
    PRIMARY KEY (book_id, number)
);

-- A revision retried with the same Idempotency-Key returns the revision the first one made.
CREATE UNIQUE INDEX book_revisions_idempotency ON book_revisions (book_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

ALTER TABLE books ADD COLUMN revision INTEGER NOT NULL DEFAULT 1;

-- Every book so far is its revision 1.
INSERT INTO book_revisions (book_id, number, status, file_name, options, title, author_list,
                            format, report, error_code, error, epub_bytes, pdf_bytes,
                            created_at, updated_at, published_at)
SELECT id, 1, status, file_name, options, title, author_list, format, report, error_code, error,
       epub_bytes, pdf_bytes, created_at, updated_at, published_at
FROM books;
