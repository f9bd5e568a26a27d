-- The turn on the split schema: the completion ends the leases and updates the records; the
-- claim takes rows out of the queue, leases them and updates their records.
WITH released AS (
  DELETE FROM job_leases WHERE id = ANY(:ids::bigint[]) AND locked_by = 'w1' RETURNING id),
done AS (
  UPDATE jobs SET state = 'completed', result = NULL, progress = 100, finished_at = (extract(epoch from clock_timestamp()) * 1000)::bigint,
         started_at = started_at + 0
  WHERE id = ANY(ARRAY(SELECT id FROM released)) RETURNING id, join_id),
now AS (SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint AS ms),
picked AS (
  SELECT c.id FROM job_queue c
  WHERE c.state = 'available' AND c.queue = ANY('{default}'::text[])
    AND (c.serial_key IS NULL OR NOT EXISTS (
         SELECT 1 FROM job_queue b WHERE b.serial_key = c.serial_key AND b.id < c.id))
    AND c.lost_workers < 2
  ORDER BY c.priority, c.fair_tag, c.id LIMIT :batch FOR UPDATE SKIP LOCKED),
taken AS (
  DELETE FROM job_queue q WHERE q.id = ANY(ARRAY(SELECT id FROM picked)) RETURNING q.id),
leased AS (
  INSERT INTO job_leases (id, locked_by, locked_until)
  SELECT id, 'w1', (SELECT ms FROM now) + 30000 FROM taken),
claimed AS (
  UPDATE jobs SET state = 'running', attempt = jobs.attempt + 1, started_at = (SELECT ms FROM now)
  WHERE jobs.id = ANY(ARRAY(SELECT id FROM taken))
  RETURNING jobs.id, jobs.kind, jobs.payload, jobs.queue, jobs.tenant, jobs.attempt, jobs.max_attempts,
            jobs.workflow, jobs.join_id, jobs.serial_key, jobs.priority, jobs.fair_tag, jobs.cost, jobs.lost_workers)
SELECT coalesce(array_agg(id), '{}') AS ids, (SELECT count(*) FROM done) AS n FROM claimed
\gset
