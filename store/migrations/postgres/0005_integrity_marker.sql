-- Whether this store authenticates its runs. The first run saved under an
-- integrity key writes this row; from then on, a handle opened without the
-- key refuses to read or write runs and decisions, so that running without
-- the key by accident cannot accept a document a database writer rewrote and
-- re-sealed with the plain checksum. (Deleting the row is a database write
-- like any other: a handle that has the key still refuses such documents.)

CREATE TABLE integrity (
    id    BIGINT PRIMARY KEY CHECK (id = 1),
    since BIGINT NOT NULL
);
