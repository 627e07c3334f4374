-- The runs that are not done, by id: a page of the waiting runs, newest
-- first, is read through this index (keyset pagination), and costs the
-- same however many runs are done or wait. Its condition is the store's
-- `S_NOT_DONE`, written the same way.

CREATE INDEX suspended_run_not_done ON suspended_run (id) WHERE state = 'open' OR execution != 'done';
