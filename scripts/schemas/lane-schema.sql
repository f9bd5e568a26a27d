-- One table whose completion can be HOT: no index reads `state` or the lease. A `lane` column
-- puts a job in the claim index (1, available), the promotion's (2, scheduled) or the dead list
-- (4); running and finished jobs are in no lane. The claim empties the lane (not HOT: the job
-- leaves the claim index); the completion changes only columns no index reads, so it is HOT
-- where its page has room (fillfactor :ff). A worker's leases are found through its own row:
-- each turn writes the ids it holds to `workers.holding`, which a rescue reads once the
-- worker's heartbeat is stale, so no index on the jobs' lease columns is needed.
DROP INDEX jobs_claim, jobs_tenant, jobs_serial, jobs_scheduled, jobs_running, jobs_dead;
ALTER TABLE jobs ADD COLUMN lane SMALLINT;
ALTER TABLE jobs SET (fillfactor = :ff);
CREATE INDEX jobs_claim ON jobs (priority, fair_tag, id) WHERE lane = 1;
CREATE INDEX jobs_tenant ON jobs (tenant, priority, fair_tag) WHERE lane = 1;
CREATE INDEX jobs_scheduled ON jobs (run_at) WHERE lane = 2;
CREATE INDEX jobs_dead ON jobs (id) WHERE lane = 4;
CREATE INDEX jobs_serial ON jobs (serial_key, id) WHERE serial_key IS NOT NULL;
ALTER TABLE workers ADD COLUMN holding BIGINT[] NOT NULL DEFAULT '{}';
