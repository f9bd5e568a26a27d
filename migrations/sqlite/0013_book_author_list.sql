-- A book's authors as a JSON array of names. `authors` joins them with "; ", which breaks in
-- two an author whose name contains "; ". Expand: the release that adds this column writes
-- both and reads this one (splitting `authors` for a row the previous release wrote meanwhile);
-- a later release drops `authors`.
ALTER TABLE books ADD COLUMN author_list TEXT;

-- The books published so far, split as the previous release read them (empty names dropped).
-- JSON-quoting the joined names escapes everything but the "; " between them, which becomes
-- the separator of a JSON array.
UPDATE books SET author_list = (
    SELECT json_group_array(value) FROM (
        SELECT value FROM json_each('[' || replace(json_quote(authors), '; ', '","') || ']')
        WHERE value <> ''
        ORDER BY key
    )
)
WHERE authors IS NOT NULL;
