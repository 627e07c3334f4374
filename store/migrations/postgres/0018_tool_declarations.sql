-- An operator's declaration per tool (SPEC §14): `inherit` (the server's
-- flag decides), `required`, `not_required` or `blocked` — never derived
-- from anything the server says.
--
-- NOT NULL DEFAULT 'inherit': every tool that exists when this runs reads
-- "inherit", so every server's tools are gated exactly as before; an
-- import's upsert leaves the column alone, so a declaration outlives the
-- imports that follow it.
--
-- An enumeration of its own, as the server's flag: the type takes exactly
-- its four labels, and the reading takes each state only from its own
-- label of this type. Anything else — a column retyped to text or a
-- number, another type's label — reads as "approval required", never as
-- "blocked" and never as "inherit".
CREATE TYPE toolgate_tool_approval AS ENUM ('inherit', 'required', 'not_required', 'blocked');

ALTER TABLE mcp_tool ADD COLUMN approval toolgate_tool_approval NOT NULL DEFAULT 'inherit';

-- Who declared it, where the name came from, through which channel, when,
-- and — for `not_required` — the digest of the definition they reviewed.
ALTER TABLE mcp_tool ADD COLUMN approval_declared_by TEXT;
ALTER TABLE mcp_tool ADD COLUMN approval_declared_source TEXT;
ALTER TABLE mcp_tool ADD COLUMN approval_declared_channel TEXT;
ALTER TABLE mcp_tool ADD COLUMN approval_declared_digest TEXT;
ALTER TABLE mcp_tool ADD COLUMN approval_declared_at BIGINT;
