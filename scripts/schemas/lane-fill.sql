-- DEPTH available jobs, as the current schema fills them, in the claim's lane (rewritten, so
-- that the table is packed to its fillfactor as a bulk insert would pack it), and the worker's
-- row.
\ir current-fill.sql
UPDATE jobs SET lane = 1;
VACUUM FULL jobs;
VACUUM ANALYZE jobs;
TRUNCATE workers;
INSERT INTO workers (id, hostname, pid, version, started_at, heartbeat_at) VALUES ('w1', 'h', 1, 'v', 0, 0);
