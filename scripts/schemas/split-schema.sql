-- The split: `jobs` keeps the record, with no index on its state or lease (so that updates
-- can be HOT, in the room a fillfactor leaves), `job_queue` the jobs waiting, with the claim's
-- keys, and `job_leases` the running ones.
DROP TABLE IF EXISTS jobs, job_queue, job_leases;
CREATE TABLE jobs (
    id               BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind             TEXT     NOT NULL,
    queue            TEXT     NOT NULL,
    tenant           TEXT     NOT NULL DEFAULT '',
    payload          TEXT     NOT NULL,
    state            TEXT     NOT NULL,
    priority         SMALLINT NOT NULL DEFAULT 0,
    fair_tag         BIGINT   NOT NULL DEFAULT 0,
    run_at           BIGINT   NOT NULL,
    attempt          INTEGER  NOT NULL DEFAULT 0,
    max_attempts     INTEGER  NOT NULL,
    unique_key       TEXT,
    serial_key       TEXT,
    workflow         TEXT,
    join_id          BIGINT,
    pending_children INTEGER  NOT NULL DEFAULT 0,
    locked_by        TEXT,
    locked_until     BIGINT,
    progress         INTEGER,
    progress_message TEXT,
    result           TEXT,
    errors           TEXT     NOT NULL DEFAULT '[]',
    created_at       BIGINT   NOT NULL,
    started_at       BIGINT,
    finished_at      BIGINT,
    lost_workers     INTEGER NOT NULL DEFAULT 0,
    cost             BIGINT NOT NULL DEFAULT 0
) WITH (fillfactor = :ff);
CREATE UNIQUE INDEX jobs_unique_key ON jobs (unique_key) WHERE unique_key IS NOT NULL;
CREATE INDEX jobs_workflow ON jobs (workflow) WHERE workflow IS NOT NULL;
CREATE INDEX jobs_join ON jobs (join_id) WHERE join_id IS NOT NULL;
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
