-- The completion of the batch the last turn claimed (`:ids`), as `completer::completion`
-- writes it; the variant's claim follows it.
WITH done AS (
  UPDATE jobs SET state = 'completed', result = NULL, progress = 100, finished_at = (extract(epoch from clock_timestamp()) * 1000)::bigint,
         started_at = started_at + 0, locked_by = NULL, locked_until = NULL
  WHERE id = ANY(:ids::bigint[]) AND state = 'running' AND locked_by = 'w1' RETURNING id, join_id),
