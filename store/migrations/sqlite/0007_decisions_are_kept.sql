-- Decision rows are audit: nothing deletes them. A decision that is voided
-- after it was recorded — its resume was refused, so the run waits for a
-- fresh decision — stays, with `voided` saying why; a suspension may so hold
-- several decisions, at most one of them standing. The table is rebuilt
-- because SQLite cannot drop the UNIQUE constraint that allowed only one.

CREATE TABLE decision_kept (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    suspension_id     INTEGER NOT NULL REFERENCES suspended_run (id),
    run_id            TEXT    NOT NULL,
    verdict           TEXT    NOT NULL CHECK (verdict IN ('approved', 'denied', 'input_submitted')),
    decided_by        TEXT    NOT NULL,
    requested_by      TEXT    NOT NULL,
    self_decided      INTEGER NOT NULL CHECK (self_decided IN (0, 1)),
    digest            TEXT    NOT NULL,
    tools             TEXT    NOT NULL,
    decided_at        BIGINT  NOT NULL,
    decided_by_source TEXT    NOT NULL DEFAULT 'unknown',
    mac               TEXT,
    -- NULL while the decision stands; why it was voided otherwise.
    voided            TEXT
);

INSERT INTO decision_kept (id, suspension_id, run_id, verdict, decided_by, requested_by,
                           self_decided, digest, tools, decided_at, decided_by_source, mac)
SELECT id, suspension_id, run_id, verdict, decided_by, requested_by,
       self_decided, digest, tools, decided_at, decided_by_source, mac
FROM decision;

DROP TABLE decision;
ALTER TABLE decision_kept RENAME TO decision;

CREATE INDEX decision_by_run ON decision (run_id);
CREATE INDEX decision_by_suspension ON decision (suspension_id);
-- At most one standing decision per suspension.
CREATE UNIQUE INDEX decision_standing ON decision (suspension_id) WHERE voided IS NULL;
