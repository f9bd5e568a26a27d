-- The split, made from the migrations' schema: `jobs` keeps the record and loses its indexes on
-- state and lease, so that its updates can be HOT in the room fillfactor :ff leaves (the
-- unique key, workflow and join indexes stay: those columns do not change); `job_queue` holds
-- the waiting jobs with the claim's keys, and `job_leases` the running ones.
DROP INDEX jobs_claim, jobs_tenant, jobs_serial, jobs_scheduled, jobs_running, jobs_dead;
ALTER TABLE jobs SET (fillfactor = :ff);
CREATE TABLE job_queue (
    id           BIGINT   PRIMARY KEY,
    queue        TEXT     NOT NULL,
    tenant       TEXT     NOT NULL,
    state        TEXT     NOT NULL,
    priority     SMALLINT NOT NULL,
    fair_tag     BIGINT   NOT NULL,
    run_at       BIGINT   NOT NULL,
    serial_key   TEXT,
    cost         BIGINT   NOT NULL DEFAULT 0,
    lost_workers INTEGER  NOT NULL DEFAULT 0
);
CREATE INDEX job_queue_claim ON job_queue (priority, fair_tag, id) WHERE state = 'available';
CREATE INDEX job_queue_tenant ON job_queue (tenant, priority, fair_tag) WHERE state = 'available';
CREATE INDEX job_queue_scheduled ON job_queue (run_at) WHERE state = 'scheduled';
CREATE TABLE job_leases (
    id           BIGINT PRIMARY KEY,
    locked_by    TEXT   NOT NULL,
    locked_until BIGINT NOT NULL
);
ALTER TABLE job_queue SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 50000, autovacuum_vacuum_cost_delay = 0);
ALTER TABLE job_leases SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000, autovacuum_vacuum_cost_delay = 0);
