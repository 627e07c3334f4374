-- A suspension's record as one chain (see the store's `chain` module): under
-- an integrity key, every decision, choice, plan, call start and call end
-- written about a suspension whose document is of version 5 or later also
-- appends a link here, tagged over the link before it; the suspension's row
-- carries the head, a tag over the number of links and the last one. Rows of
-- suspensions paused before this migration keep no chain (their head stays
-- NULL), and are read under each row's own tag, as before.

CREATE TABLE record_link (
    suspension_id BIGINT NOT NULL REFERENCES suspended_run (id),
    seq           BIGINT NOT NULL,
    event         TEXT   NOT NULL,
    mac           TEXT   NOT NULL,
    PRIMARY KEY (suspension_id, seq)
);

ALTER TABLE suspended_run ADD COLUMN chain_mac TEXT;
