-- The tools of each suspension's pending turn, one row per tool, so a
-- listing narrowed to a server or a tool is read through an index, newest
-- first, and never decodes a document; written with the suspension, and
-- filled here for the suspensions stored before. The requester's index
-- serves a listing narrowed to one requester the same way.

CREATE TABLE suspended_tool (
    suspension_id INTEGER NOT NULL REFERENCES suspended_run (id),
    -- The tool's name: `server.tool` for an imported one.
    tool          TEXT    NOT NULL,
    -- An imported tool's server; '' for a local tool.
    server        TEXT    NOT NULL,
    PRIMARY KEY (suspension_id, tool)
);

CREATE INDEX suspended_tool_by_tool ON suspended_tool (tool, suspension_id);
CREATE INDEX suspended_tool_by_server ON suspended_tool (server, suspension_id);
CREATE INDEX suspended_run_by_requester ON suspended_run (requested_by, id);

-- A document that does not read is skipped: the store refuses to decode
-- it anyway, and lists it with its problem.
INSERT OR IGNORE INTO suspended_tool (suspension_id, tool, server)
SELECT s.id,
       json_extract(c.value, '$.name'),
       CASE WHEN instr(json_extract(c.value, '$.name'), '.') > 0
            THEN substr(json_extract(c.value, '$.name'), 1, instr(json_extract(c.value, '$.name'), '.') - 1)
            ELSE '' END
FROM suspended_run s,
     json_each(CASE WHEN json_valid(s.document) AND json_type(s.document, '$.body.pending') = 'array'
                    THEN json_extract(s.document, '$.body.pending') ELSE '[]' END) c
WHERE json_type(c.value, '$.name') = 'text';
