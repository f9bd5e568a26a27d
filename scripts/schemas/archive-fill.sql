-- The current schema, plus a table that finished jobs move to (as graphile-worker deletes them
-- and PGMQ archives them), so that `jobs` holds only live work.
DROP TABLE IF EXISTS jobs_done;
CREATE TABLE jobs_done (LIKE jobs INCLUDING DEFAULTS);
ALTER TABLE jobs_done ADD PRIMARY KEY (id);
\ir current-fill.sql
