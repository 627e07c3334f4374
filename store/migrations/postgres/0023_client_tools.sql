-- A coding agent's own tools, reached through its pre-tool hooks (SPEC §15):
-- a source of their own, each tool requiring approval until an operator
-- declares otherwise.
--
-- `client_tool`: the operator's declaration per client and tool, typed as a
-- tool's own declaration (0018) and read by the same fail-closed function;
-- no row reads as "approval required".
CREATE TABLE client_tool (
    client TEXT NOT NULL,
    tool TEXT NOT NULL,
    approval toolgate_tool_approval NOT NULL,
    declared_by TEXT NOT NULL,
    declared_source TEXT NOT NULL,
    declared_at BIGINT NOT NULL,
    PRIMARY KEY (client, tool)
);

-- Command rules: an exact prefix of a shell command's argument list,
-- stored as a JSON array of its words, that lowers the shell's gate for a
-- command that is nothing but that prefix and plain words after it.
CREATE TABLE command_rule (
    client TEXT NOT NULL,
    words TEXT NOT NULL,
    declared_by TEXT NOT NULL,
    declared_source TEXT NOT NULL,
    declared_at BIGINT NOT NULL,
    PRIMARY KEY (client, words)
);

-- What a client reported of a held call it ran (its post-tool hook): an
-- allow is not proof that a call ran.
CREATE TABLE client_outcome (
    run_id TEXT NOT NULL,
    recorded_at BIGINT NOT NULL,
    tool_use_id TEXT,
    outcome TEXT NOT NULL
);

CREATE INDEX client_outcome_of ON client_outcome (run_id);

-- The runs a hook answered allow, each once: one approval lets one call
-- run, however many hook processes asked it at once; by the client's own id
-- for the call, when it gave one, what its post-tool hook reports is
-- recorded against that run whatever input the client ran it with.
CREATE TABLE client_call (
    run_id TEXT PRIMARY KEY,
    client TEXT NOT NULL,
    tool_use_id TEXT,
    allowed_at BIGINT NOT NULL
);

CREATE INDEX client_call_by_id ON client_call (client, tool_use_id);
