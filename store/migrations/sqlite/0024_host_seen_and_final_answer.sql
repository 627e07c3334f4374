-- What a run's page can say of the host that resumes it, and of how it
-- ended.
--
-- `host_seen`: when a process of each host name last looked for work to
-- claim (a heartbeat, written at most every few seconds while it polls). A
-- name that is never seen has no row. It is shown, never acted on: no
-- claim or lease reads it.
CREATE TABLE host_seen (
    host TEXT PRIMARY KEY,
    seen_at BIGINT NOT NULL
);

-- The model's final answer, for a suspension whose resumed run finished:
-- shown on the run's page, never read by a resume.
ALTER TABLE suspended_run ADD COLUMN final_answer TEXT;
