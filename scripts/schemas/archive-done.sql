-- The completion on the archive schema: it moves its jobs to `jobs_done`; `current-claim.sql` follows it.
WITH finished AS (
  DELETE FROM jobs WHERE id = ANY(:ids::bigint[]) AND state = 'running' AND locked_by = 'w1'
  RETURNING *),
done AS (
  INSERT INTO jobs_done SELECT id, kind, queue, tenant, payload, 'completed', priority, fair_tag, run_at, attempt,
         max_attempts, unique_key, serial_key, workflow, join_id, pending_children, NULL, NULL, 100,
         progress_message, NULL, errors, created_at, started_at + 0, (extract(epoch from clock_timestamp()) * 1000)::bigint, lost_workers, cost
  FROM finished RETURNING id, join_id),
