-- Notifications: an outbox of what happened to runs, and its deliveries.
--
-- An event is written in the same transaction as the change of state it
-- tells of (a run starts waiting, is decided, resumed, or expires), with one
-- delivery row for every sink configured at that moment. A dispatcher
-- delivers from here at least once: it leases a due delivery, sends it, and
-- marks it delivered only after the sink took it; a dispatcher that dies
-- mid-delivery leaves the lease to run out and the delivery to be sent again
-- under the same event id, which a receiver de-duplicates on.

CREATE TABLE notification_sink (
    name        TEXT    PRIMARY KEY,
    -- webhook, slack or email: how the dispatcher sends.
    kind        TEXT    NOT NULL CHECK (kind IN ('webhook', 'slack', 'email')),
    -- The sink's settings as JSON: addresses, and where each secret is read
    -- from (a file or an environment variable) — never a secret itself.
    settings    TEXT    NOT NULL,
    -- The highest data class the sink may receive: a run whose servers are
    -- above it is notified without its arguments' summary.
    max_class   TEXT    NOT NULL,
    created_by  TEXT    NOT NULL,
    created_at  BIGINT  NOT NULL
);

CREATE TABLE notification_event (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    -- The event's stable id, sent to every sink (webhook-id).
    event_id      TEXT    NOT NULL UNIQUE,
    run_id        TEXT    NOT NULL,
    suspension_id BIGINT  NOT NULL,
    -- waiting, decided, resumed or expired.
    kind          TEXT    NOT NULL,
    -- The strictest data class of the run's servers; NULL when the run used
    -- none; 'unknown' when a server's class could not be read.
    data_class    TEXT,
    -- The event as JSON, with the arguments' summaries a sink may drop.
    payload       TEXT    NOT NULL,
    created_at    BIGINT  NOT NULL
);

CREATE INDEX notification_event_by_suspension ON notification_event (suspension_id, kind);

CREATE TABLE notification_delivery (
    event       BIGINT  NOT NULL REFERENCES notification_event (id) ON DELETE CASCADE,
    sink        TEXT    NOT NULL REFERENCES notification_sink (name) ON DELETE CASCADE,
    attempts    BIGINT  NOT NULL DEFAULT 0,
    -- Not before this time (milliseconds): the backoff after a failure.
    next_at     BIGINT  NOT NULL,
    -- A dispatcher's lease while it sends.
    leased_by   TEXT,
    lease_until BIGINT,
    delivered_at BIGINT,
    -- Set when the delivery was given up on (too old to be useful).
    given_up_at BIGINT,
    last_error  TEXT,
    PRIMARY KEY (event, sink)
);

CREATE INDEX notification_delivery_due ON notification_delivery (next_at)
    WHERE delivered_at IS NULL AND given_up_at IS NULL;
