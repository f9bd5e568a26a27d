-- The durable job queue. See src/jobs/ for the guarantees these columns carry.
--
-- state: available (due; the claim index holds only these), scheduled (run_at in the future:
-- delayed, retrying or snoozed; promoted when due), waiting (a join whose children are unfinished),
-- running (claimed; locked_by holds a lease until locked_until), and the terminal states
-- completed, discarded (bad input, never retried), dead (out of attempts), cancelled.
-- Times are unix milliseconds from the database's clock.
CREATE TABLE jobs (
    id               BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind             TEXT     NOT NULL,
    queue            TEXT     NOT NULL,
    tenant           TEXT     NOT NULL DEFAULT '',
    payload          TEXT     NOT NULL,
    state            TEXT     NOT NULL,
    priority         SMALLINT NOT NULL DEFAULT 0,
    -- Start-time fair queuing between tenants: claims go in (priority, fair_tag, id) order,
    -- and a tenant's new job is tagged after its own queued jobs but no earlier than the
    -- queue's current front, so tenants interleave round-robin.
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
    finished_at      BIGINT
);

CREATE INDEX jobs_claim ON jobs (priority, fair_tag, id) WHERE state = 'available';
CREATE INDEX jobs_tenant ON jobs (tenant, priority, fair_tag) WHERE state = 'available';
CREATE UNIQUE INDEX jobs_unique_key ON jobs (unique_key) WHERE unique_key IS NOT NULL;
CREATE INDEX jobs_serial ON jobs (serial_key, id)
    WHERE serial_key IS NOT NULL AND state IN ('available', 'scheduled', 'waiting', 'running');
CREATE INDEX jobs_scheduled ON jobs (run_at) WHERE state = 'scheduled';
CREATE INDEX jobs_running ON jobs (locked_by) WHERE state = 'running';
CREATE INDEX jobs_workflow ON jobs (workflow) WHERE workflow IS NOT NULL;
CREATE INDEX jobs_join ON jobs (join_id) WHERE join_id IS NOT NULL;
-- No index on finished_at: every completion would pay for it, and only the hourly prune
-- reads it.
-- Dead jobs wait for a person; listing them must not scan the whole history.
CREATE INDEX jobs_dead ON jobs (id) WHERE state = 'dead';

-- Queues an operator has paused. A queue with no row is running.
CREATE TABLE job_queues (
    name       TEXT    PRIMARY KEY,
    paused     BOOLEAN NOT NULL DEFAULT false,
    updated_at BIGINT  NOT NULL
);
