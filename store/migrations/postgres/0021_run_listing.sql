-- The tools of each suspension's pending turn, one row per tool, so a
-- listing narrowed to a server or a tool is read through an index, newest
-- first, and never decodes a document; written with the suspension, and
-- filled here for the suspensions stored before. The requester's index
-- serves a listing narrowed to one requester the same way.

CREATE TABLE suspended_tool (
    suspension_id BIGINT NOT NULL REFERENCES suspended_run (id),
    -- The tool's name: `server.tool` for an imported one.
    tool          TEXT   NOT NULL,
    -- An imported tool's server; '' for a local tool.
    server        TEXT   NOT NULL,
    PRIMARY KEY (suspension_id, tool)
);

CREATE INDEX suspended_tool_by_tool ON suspended_tool (tool, suspension_id);
CREATE INDEX suspended_tool_by_server ON suspended_tool (server, suspension_id);
CREATE INDEX suspended_run_by_requester ON suspended_run (requested_by, id);

-- A document that does not read is skipped: the store refuses to decode
-- it anyway, and lists it with its problem.
DO $$
DECLARE
    row RECORD;
    pending JSONB;
BEGIN
    FOR row IN SELECT id, document FROM suspended_run LOOP
        BEGIN
            pending := row.document::jsonb -> 'body' -> 'pending';
            IF jsonb_typeof(pending) = 'array' THEN
                INSERT INTO suspended_tool (suspension_id, tool, server)
                SELECT row.id, c ->> 'name',
                       CASE WHEN position('.' IN c ->> 'name') > 0
                            THEN split_part(c ->> 'name', '.', 1) ELSE '' END
                FROM jsonb_array_elements(pending) AS c
                WHERE jsonb_typeof(c -> 'name') = 'string'
                ON CONFLICT DO NOTHING;
            END IF;
        EXCEPTION WHEN invalid_text_representation THEN
            NULL;
        END;
    END LOOP;
END
$$;
