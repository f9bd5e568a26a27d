-- What a job is expected to cost its worker, in bytes of memory (0: too little to count).
-- A worker admits jobs within WORKER_MEMORY_BUDGET by this estimate, and no tenant may hold
-- more than three quarters of it while another's jobs wait.
ALTER TABLE jobs ADD COLUMN cost INTEGER NOT NULL DEFAULT 0;
