-- Where a decider's name came from (a flag, the environment, the operating
-- system's user, or a host program), and an integrity tag over each decision
-- row.
--
-- Rows written before this migration did not record a source: they read as
-- 'unknown', which claims nothing. `mac` is an HMAC-SHA-256 tag over the
-- record when the store has an integrity key, NULL otherwise; a store with a
-- key refuses a row whose tag is missing or does not verify.

ALTER TABLE decision ADD COLUMN decided_by_source TEXT NOT NULL DEFAULT 'unknown';
ALTER TABLE decision ADD COLUMN mac TEXT;
