-- The queue as it is: DEPTH available no-op jobs across four tenants, settled.
TRUNCATE jobs;
INSERT INTO jobs (kind, queue, tenant, payload, state, priority, fair_tag, run_at, max_attempts, created_at)
SELECT 'noop', 'default', 't' || (g % 4), '{"n":' || g || '}', 'available', 0, g, 0, 25, 0
FROM generate_series(1, :depth) g;
VACUUM ANALYZE jobs;
