-- One row per live worker process. The worker rewrites heartbeat_at every few seconds from a
-- task that does not run jobs; the supervising web process and /readyz read it. Times are unix
-- milliseconds from the database's own clock, so hosts with skewed clocks agree.
CREATE TABLE workers (
    id           TEXT   PRIMARY KEY,
    hostname     TEXT   NOT NULL,
    pid          BIGINT NOT NULL,
    version      TEXT   NOT NULL,
    started_at   BIGINT NOT NULL,
    heartbeat_at BIGINT NOT NULL
);

CREATE INDEX workers_heartbeat_at ON workers (heartbeat_at);
