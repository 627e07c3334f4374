-- Per-call decisions, receipts, M-of-N approvals.
--
-- A decision row keeps the turn call by call (`calls`: each call's verdict,
-- the model's arguments, edited arguments, and the digest of the tool
-- definition the reviewer saw) and the operator revision it was taken under.
-- A run that needs several approvers collects partial approvals: rows with
-- `partial = 1`, one per approver, until the last one arrives; only the
-- completing row stands as the decision.

ALTER TABLE decision ADD COLUMN calls TEXT;
ALTER TABLE decision ADD COLUMN policy_revision BIGINT;
ALTER TABLE decision ADD COLUMN partial INTEGER NOT NULL DEFAULT 0 CHECK (partial IN (0, 1));

DROP INDEX decision_standing;
CREATE UNIQUE INDEX decision_standing ON decision (suspension_id) WHERE voided IS NULL AND partial = 0;

-- Under an integrity key, a call's recorded result and an operator's choice
-- carry a tag too: one written by someone without the key reads as nothing
-- recorded (the call's outcome unknown), never as a result or a choice.
ALTER TABLE call_execution ADD COLUMN mac TEXT;
ALTER TABLE execution_choice ADD COLUMN mac TEXT;
