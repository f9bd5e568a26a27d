-- DEPTH available jobs, in the record (as the current schema fills it) and in the queue, settled.
\ir current-fill.sql
TRUNCATE job_queue, job_leases;
INSERT INTO job_queue (id, queue, tenant, state, priority, fair_tag, run_at)
SELECT id, queue, tenant, state, priority, fair_tag, run_at FROM jobs;
VACUUM ANALYZE job_queue, job_leases;
