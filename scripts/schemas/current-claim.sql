-- The claim of the next batch of jobs, after a completion (`done`), as
-- `claim::claim_and_complete_text` writes it (no suspects, no memory budget); it keeps their
-- ids for the next turn's completion. (pgbench reads a colon and a name as its variable, even
-- in a comment.)
now AS (SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint AS ms),
picked AS (
  SELECT c.id FROM jobs c
  WHERE c.state = 'available' AND c.queue = ANY('{default}'::text[])
    AND (c.serial_key IS NULL OR NOT EXISTS (
         SELECT 1 FROM jobs b WHERE b.serial_key = c.serial_key AND b.id < c.id
           AND b.state IN ('available', 'scheduled', 'waiting', 'running')))
    AND c.lost_workers < 2
  ORDER BY c.priority, c.fair_tag, c.id LIMIT :batch FOR UPDATE SKIP LOCKED),
claimed AS (
  UPDATE jobs SET state = 'running', attempt = jobs.attempt + 1, locked_by = 'w1',
         locked_until = (SELECT ms FROM now) + 30000, started_at = (SELECT ms FROM now)
  WHERE jobs.id = ANY(ARRAY(SELECT id FROM picked))
  RETURNING jobs.id, jobs.kind, jobs.payload, jobs.queue, jobs.tenant, jobs.attempt, jobs.max_attempts,
            jobs.workflow, jobs.join_id, jobs.serial_key, jobs.priority, jobs.fair_tag, jobs.cost, jobs.lost_workers)
SELECT coalesce(array_agg(id), '{}') AS ids, (SELECT count(*) FROM done) AS n FROM claimed
\gset
