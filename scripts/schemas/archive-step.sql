-- The turn on the archive schema: the completion moves its jobs to `jobs_done`.
WITH finished AS (
  DELETE FROM jobs WHERE id = ANY(:ids::bigint[]) AND state = 'running' AND locked_by = 'w1'
  RETURNING *),
done AS (
  INSERT INTO jobs_done SELECT id, kind, queue, tenant, payload, 'completed', priority, fair_tag, run_at, attempt,
         max_attempts, unique_key, serial_key, workflow, join_id, pending_children, NULL, NULL, 100,
         progress_message, NULL, errors, created_at, started_at + 0, (extract(epoch from clock_timestamp()) * 1000)::bigint, lost_workers, cost
  FROM finished RETURNING id, join_id),
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
