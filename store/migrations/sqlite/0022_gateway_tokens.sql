-- The people behind the gateway served over HTTP: each token by its public
-- id, for one person — the requester of every call made with it — by the
-- key the identity rules compare names by (`person`) and as first written
-- (`shown`). Only the SHA-256 of the token's secret is kept: the database
-- holds nothing that calls anything. Revoking a token refuses its next
-- request.

CREATE TABLE gateway_token (
    id TEXT PRIMARY KEY,
    secret_hash TEXT NOT NULL,
    person TEXT NOT NULL,
    shown TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    last_used_at BIGINT,
    revoked_at BIGINT
);

CREATE INDEX gateway_token_of ON gateway_token (person);
