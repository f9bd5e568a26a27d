-- What changed in a revision since the revision before it (the newest built one below it),
-- stored as it is published, so that the report outlives the files it was made from: a
-- revision past the newest REVISIONS_KEPT keeps its record and this, not its files.
-- `changes` is the JSON of `ebook::changes::Changes`. Expand only: the previous release
-- neither reads nor writes it.
CREATE TABLE revision_changes (
    book_id     TEXT    NOT NULL,
    number      BIGINT  NOT NULL,
    from_number BIGINT  NOT NULL,
    changes     TEXT    NOT NULL,
    PRIMARY KEY (book_id, number)
);
