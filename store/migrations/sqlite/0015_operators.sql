-- The people who sign in to decide (the web inbox): each operator by the key
-- the identity rules compare names by (`name`), and as first written
-- (`shown`); the one-time sign-in links made for
-- them and the sessions those opened, each kept only as the SHA-256 of its
-- secret, with its expiry. Revoking an operator ends every link and session
-- of theirs at once.

CREATE TABLE operator (
    name TEXT PRIMARY KEY,
    shown TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);

CREATE TABLE operator_link (
    secret_hash TEXT PRIMARY KEY,
    operator TEXT NOT NULL REFERENCES operator (name) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at BIGINT
);

CREATE TABLE operator_session (
    secret_hash TEXT PRIMARY KEY,
    operator TEXT NOT NULL REFERENCES operator (name) ON DELETE CASCADE,
    csrf_token TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    ended_at BIGINT
);

CREATE INDEX operator_session_of ON operator_session (operator);
CREATE INDEX operator_link_of ON operator_link (operator);
