-- A book's authors as a JSON array of names. `authors` joins them with "; ", which breaks in
-- two an author whose name contains "; ". Expand: the release that adds this column writes
-- both and reads this one (splitting `authors` for a row the previous release wrote meanwhile);
-- a later release drops `authors`.
ALTER TABLE books ADD COLUMN author_list TEXT;

-- The books published so far, split as the previous release read them (empty names dropped).
UPDATE books SET author_list = (
    SELECT COALESCE(jsonb_agg(name ORDER BY n), '[]'::jsonb)::text
    FROM unnest(string_to_array(authors, '; ')) WITH ORDINALITY AS t(name, n)
    WHERE name <> ''
)
WHERE authors IS NOT NULL;
