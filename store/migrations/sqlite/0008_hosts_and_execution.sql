-- Operator decides, host resumes.
--
-- A suspended run belongs to a host (`owner`, a name the host chooses).
-- Deciding only records: the suspension becomes `decided` with its decision
-- row. The owning host then claims the execution with a conditional update
-- (`execution`: pending -> resuming) under a lease, so exactly one of any
-- number of hosts of that name resumes it, and a host that dies leaves a row
-- another picks up when the lease runs out.
--
-- Runs stored before this migration were resumed by the process that
-- decided them: they are `done`, and belong to the demo host.

ALTER TABLE suspended_run ADD COLUMN owner TEXT NOT NULL DEFAULT 'demo';
ALTER TABLE suspended_run ADD COLUMN execution TEXT NOT NULL DEFAULT 'done'
    CHECK (execution IN ('pending', 'resuming', 'outcome_unknown', 'done'));
-- The host process (an instance id) holding the execution, and until when.
ALTER TABLE suspended_run ADD COLUMN resumed_by TEXT;
ALTER TABLE suspended_run ADD COLUMN lease_until BIGINT;
-- How the execution ended, in words: finished, suspended again, failed: ...
ALTER TABLE suspended_run ADD COLUMN outcome TEXT;
ALTER TABLE suspended_run ADD COLUMN updated_at BIGINT;

UPDATE suspended_run SET execution = 'pending' WHERE state = 'open';

CREATE INDEX suspended_run_host_inbox ON suspended_run (owner, execution) WHERE state = 'decided';

-- The data an input decision submitted, so the host resumes with it.
ALTER TABLE decision ADD COLUMN input TEXT;

-- What each turn of a resumed run will do, written before any of it runs.
CREATE TABLE turn_plan (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    suspension_id INTEGER NOT NULL REFERENCES suspended_run (id),
    turn          INTEGER NOT NULL,
    plan          TEXT    NOT NULL,
    mac           TEXT,
    created_at    BIGINT  NOT NULL,
    UNIQUE (suspension_id, turn)
);

-- Each call of a plan that runs: started before, ended after.
CREATE TABLE call_execution (
    plan_id     INTEGER NOT NULL REFERENCES turn_plan (id),
    call_index  INTEGER NOT NULL,
    call_id     TEXT    NOT NULL,
    tool        TEXT    NOT NULL,
    effect      TEXT    NOT NULL,
    state       TEXT    NOT NULL CHECK (state IN ('started', 'ended')),
    output      TEXT,
    attempts    INTEGER NOT NULL DEFAULT 1,
    started_at  BIGINT  NOT NULL,
    ended_at    BIGINT,
    PRIMARY KEY (plan_id, call_index)
);

-- An operator's choice for a call whose outcome is unknown: run it again, or
-- skip it. Audit, like decisions: append-only. A choice answers one attempt;
-- a rerun that is cut short again needs a new choice. The newest choice for
-- an attempt that verifies (under a key) is the one acted on.
CREATE TABLE execution_choice (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    plan_id           INTEGER NOT NULL REFERENCES turn_plan (id),
    call_index        INTEGER NOT NULL,
    attempt           INTEGER NOT NULL,
    choice            TEXT    NOT NULL CHECK (choice IN ('rerun', 'skip')),
    decided_by        TEXT    NOT NULL,
    decided_by_source TEXT    NOT NULL,
    decided_at        BIGINT  NOT NULL
);

CREATE INDEX execution_choice_by_call ON execution_choice (plan_id, call_index, attempt);
