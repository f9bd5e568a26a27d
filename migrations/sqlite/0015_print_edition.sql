-- The print edition's size when the book has one: a ready book offers its PDF and print cover
-- only when this is set (the print edition is an extra, and can fail alone). Expand only: the
-- previous release never reads or writes it, and leaves it empty for the books it publishes.
ALTER TABLE books ADD COLUMN pdf_bytes BIGINT;
