-- One number that every operator change moves: a server added, changed
-- (its approval flag, data class, enabled state, transport, import status) or
-- removed, and any change to a catalogue. A running host reads it once per
-- turn and reads the servers and catalogues again when it moved, so that an
-- operator who turns approval back on for a server is obeyed at that host's
-- next turn. Triggers keep it in the database itself: every writer, this
-- build's or another process's, moves it.

CREATE TABLE operator_revision (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    value INTEGER NOT NULL
);
INSERT INTO operator_revision (id, value) VALUES (1, 0);

CREATE TRIGGER server_added AFTER INSERT ON mcp_server
BEGIN UPDATE operator_revision SET value = value + 1 WHERE id = 1; END;
CREATE TRIGGER server_changed AFTER UPDATE ON mcp_server
BEGIN UPDATE operator_revision SET value = value + 1 WHERE id = 1; END;
CREATE TRIGGER server_removed AFTER DELETE ON mcp_server
BEGIN UPDATE operator_revision SET value = value + 1 WHERE id = 1; END;
CREATE TRIGGER tool_added AFTER INSERT ON mcp_tool
BEGIN UPDATE operator_revision SET value = value + 1 WHERE id = 1; END;
CREATE TRIGGER tool_changed AFTER UPDATE ON mcp_tool
BEGIN UPDATE operator_revision SET value = value + 1 WHERE id = 1; END;
CREATE TRIGGER tool_removed AFTER DELETE ON mcp_tool
BEGIN UPDATE operator_revision SET value = value + 1 WHERE id = 1; END;
