-- A gateway's held calls, by what makes a call the same call: a key the
-- gateway computes from its name, the requester, the tool's local name,
-- the arguments' digest and the client's name. Every gateway process of
-- the name answers a call by its row: it joins the run the key names
-- while that run lives, and answers with the result kept in `answer` for
-- as long as the gateway keeps answers. Registering is one statement on
-- the key (an insert that does nothing on conflict, or a conditional
-- update of a row whose run is over), so calls asked at once join one run.

CREATE TABLE held_call (
    call_key    TEXT    PRIMARY KEY,
    run_id      TEXT    NOT NULL,
    owner       TEXT    NOT NULL,
    created_at  BIGINT  NOT NULL,
    -- The call's answer, as the gateway serves it, once its run is over.
    answer      TEXT,
    answered_at BIGINT
);

CREATE INDEX held_call_by_run ON held_call (run_id);
