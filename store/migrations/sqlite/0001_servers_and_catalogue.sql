-- The operator's MCP servers and the tool catalogue imported from each.
--
-- Portable SQL: TEXT, BIGINT and INTEGER columns, CHECK constraints, and
-- timestamps as milliseconds since the Unix epoch, so that a PostgreSQL
-- backend can apply the same history.

CREATE TABLE mcp_server (
    -- Prefixes every imported tool's local name.
    id            TEXT    PRIMARY KEY NOT NULL,
    name          TEXT    NOT NULL,
    transport     TEXT    NOT NULL CHECK (transport IN ('stdio', 'http')),
    -- For stdio: the program and its arguments, as a JSON array of strings.
    command       TEXT,
    -- For http: the streamable HTTP endpoint.
    url           TEXT,
    -- The operator's declaration of what the server's tools return. NULL is
    -- "undeclared": such a server is inert and supplies no tools.
    data_class    TEXT,
    enabled       INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
    import_status TEXT    NOT NULL DEFAULT 'never',
    import_error  TEXT,
    imported_at   BIGINT,
    created_at    BIGINT  NOT NULL,
    updated_at    BIGINT  NOT NULL,
    CHECK ((transport = 'stdio' AND command IS NOT NULL) OR (transport = 'http' AND url IS NOT NULL))
);

CREATE TABLE mcp_tool (
    server_id     TEXT    NOT NULL REFERENCES mcp_server (id) ON DELETE CASCADE,
    remote_name   TEXT    NOT NULL,
    local_name    TEXT    NOT NULL,
    description   TEXT    NOT NULL,
    -- The tool's input schema as the server sent it (JSON).
    input_schema  TEXT    NOT NULL,
    -- The server's `annotations` block, verbatim, for display only: no
    -- decision reads it.
    annotations   TEXT,
    -- A tool that vanished from the server is kept and marked, not deleted.
    orphaned      INTEGER NOT NULL DEFAULT 0 CHECK (orphaned IN (0, 1)),
    first_seen_at BIGINT  NOT NULL,
    last_seen_at  BIGINT  NOT NULL,
    PRIMARY KEY (server_id, remote_name)
);

CREATE INDEX mcp_tool_by_local_name ON mcp_tool (local_name);
