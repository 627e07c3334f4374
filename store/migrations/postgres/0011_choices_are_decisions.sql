-- An operator's choice on a call whose outcome is unknown is a decision: it
-- names the call it was shown (`call_id`) and carries the digest of what it
-- was shown (`digest`: the run, the suspension, the turn, the call, the
-- arguments it runs with and the attempt), and says why (`reason`). A rerun
-- of a run that needs several approvers collects one row per person until
-- as many as the run's approvals have chosen it; a skip stands at once.
--
-- Rows written before this migration keep their columns NULL and the tag
-- they were written with.

ALTER TABLE execution_choice ADD COLUMN call_id TEXT;
ALTER TABLE execution_choice ADD COLUMN digest TEXT;
ALTER TABLE execution_choice ADD COLUMN reason TEXT;
