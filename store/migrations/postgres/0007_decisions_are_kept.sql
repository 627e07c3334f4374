-- Decision rows are audit: nothing deletes them. A decision that is voided
-- after it was recorded — its resume was refused, so the run waits for a
-- fresh decision — stays, with `voided` saying why; a suspension may so hold
-- several decisions, at most one of them standing.

ALTER TABLE decision DROP CONSTRAINT decision_suspension_id_key;
-- NULL while the decision stands; why it was voided otherwise.
ALTER TABLE decision ADD COLUMN voided TEXT;

CREATE INDEX decision_by_suspension ON decision (suspension_id);
-- At most one standing decision per suspension.
CREATE UNIQUE INDEX decision_standing ON decision (suspension_id) WHERE voided IS NULL;
