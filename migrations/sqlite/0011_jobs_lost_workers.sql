-- How many attempts of a job ended with its worker gone (lease expired). A job that keeps
-- taking its worker down (out of memory, a crash in a library) is stopped after a few such
-- attempts instead of spending all of them, each one a restart of the service.
ALTER TABLE jobs ADD COLUMN lost_workers INTEGER NOT NULL DEFAULT 0;
