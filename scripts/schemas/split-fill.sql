-- DEPTH available jobs, in the record and in the queue, settled.
TRUNCATE jobs, job_queue, job_leases;
INSERT INTO jobs (kind, queue, tenant, payload, state, priority, fair_tag, run_at, max_attempts, created_at)
SELECT 'noop', 'default', 't' || (g % 4), '{"n":' || g || '}', 'available', 0, g, 0, 25, 0
FROM generate_series(1, :depth) g;
INSERT INTO job_queue (id, queue, tenant, state, priority, fair_tag, run_at)
SELECT id, queue, tenant, state, priority, fair_tag, run_at FROM jobs;
VACUUM ANALYZE jobs, job_queue, job_leases;
