-- One number that every operator change moves: a server added, changed
-- (its approval flag, data class, enabled state, transport, import status) or
-- removed, and any change to a catalogue. A running host reads it once per
-- turn and reads the servers and catalogues again when it moved, so that an
-- operator who turns approval back on for a server is obeyed at that host's
-- next turn. Triggers keep it in the database itself: every writer, this
-- build's or another process's on any machine, moves it — and announces the
-- change on the `toolgate_operator` channel, so listening hosts need not
-- poll for it.
--
-- The triggers fire once per statement: an import that writes a thousand
-- tools moves the number once, not a thousand times on one hot row.

CREATE TABLE operator_revision (
    id    BIGINT PRIMARY KEY CHECK (id = 1),
    value BIGINT NOT NULL
);
INSERT INTO operator_revision (id, value) VALUES (1, 0);

CREATE FUNCTION toolgate_operator_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE operator_revision SET value = value + 1 WHERE id = 1;
    PERFORM pg_notify('toolgate_operator', TG_TABLE_NAME);
    RETURN NULL;
END
$$;

CREATE TRIGGER server_changed AFTER INSERT OR UPDATE OR DELETE ON mcp_server
    FOR EACH STATEMENT EXECUTE FUNCTION toolgate_operator_changed();
CREATE TRIGGER tool_changed AFTER INSERT OR UPDATE OR DELETE ON mcp_tool
    FOR EACH STATEMENT EXECUTE FUNCTION toolgate_operator_changed();
