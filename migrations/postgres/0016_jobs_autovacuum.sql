-- Every claim and completion leaves a dead version of its job's row, and an entry for it in the
-- claim index that the next claim walks over until vacuum removes it. By default autovacuum
-- waits until a fifth of the table is dead, which, with millions of finished jobs kept for
-- their retention, is hundreds of thousands of claims, and then paces itself. So on this table
-- it starts at a fixed count of dead rows, and is not paced. Workers also vacuum the table
-- themselves as they claim (src/jobs/maintenance.rs): autovacuum looks only once a minute by
-- default, and that is the server's setting, not the table's.
ALTER TABLE jobs SET (
    autovacuum_vacuum_scale_factor = 0,
    autovacuum_vacuum_threshold = 50000,
    autovacuum_vacuum_cost_delay = 0
);
