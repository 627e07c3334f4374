-- Suspended runs and the decisions taken on them.
--
-- A run may suspend several times; each suspension is a row. At most one row
-- per run is open. Deciding claims the open row with a conditional UPDATE, in
-- the same transaction as the decision row, so of any number of concurrent
-- deciders exactly one wins.

CREATE TABLE suspended_run (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id        TEXT    NOT NULL,
    -- awaiting_approval or waiting_for_input, as in the document.
    status        TEXT    NOT NULL,
    -- The versioned JSON document, exactly as encoded.
    document      TEXT    NOT NULL,
    -- The digest of the pending turn, for lookups and display.
    digest        TEXT    NOT NULL,
    requested_by  TEXT    NOT NULL,
    created_at    BIGINT  NOT NULL,
    state         TEXT    NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'decided')),
    decided_by    TEXT,
    decided_at    BIGINT
);

CREATE UNIQUE INDEX suspended_run_one_open ON suspended_run (run_id) WHERE state = 'open';

CREATE TABLE decision (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    suspension_id INTEGER NOT NULL UNIQUE REFERENCES suspended_run (id),
    run_id        TEXT    NOT NULL,
    verdict       TEXT    NOT NULL CHECK (verdict IN ('approved', 'denied', 'input_submitted')),
    decided_by    TEXT    NOT NULL,
    requested_by  TEXT    NOT NULL,
    self_decided  INTEGER NOT NULL CHECK (self_decided IN (0, 1)),
    digest        TEXT    NOT NULL,
    -- The names of the turn's calls, as a JSON array.
    tools         TEXT    NOT NULL,
    decided_at    BIGINT  NOT NULL
);

CREATE INDEX decision_by_run ON decision (run_id);
