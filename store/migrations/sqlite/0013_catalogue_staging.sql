-- An import's pages as they arrive (see the store's `catalogue::stage`
-- module): each page is written here in a short transaction of its own and
-- dropped from memory, and the catalogue is replaced from these rows in one
-- transaction at the end, so an import holds one page at a time whatever the
-- server lists. A stage is deleted when its import ends, replaced or failed;
-- one left by a killed import is deleted by a later import once it has not
-- been touched for a day. Nothing else reads these rows.

CREATE TABLE catalogue_stage (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    server_id  TEXT    NOT NULL,
    touched_at BIGINT  NOT NULL
);

CREATE TABLE catalogue_stage_tool (
    stage_id     BIGINT NOT NULL,
    seq          BIGINT NOT NULL,
    remote_name  TEXT   NOT NULL,
    local_name   TEXT   NOT NULL,
    description  TEXT   NOT NULL,
    input_schema TEXT   NOT NULL,
    annotations  TEXT,
    definition   TEXT   NOT NULL,
    PRIMARY KEY (stage_id, remote_name)
);
