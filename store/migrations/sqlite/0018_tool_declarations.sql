-- An operator's declaration per tool (SPEC §14): `inherit` (the server's
-- flag decides), `required`, `not_required` or `blocked` — never derived
-- from anything the server says.
--
-- NOT NULL DEFAULT 'inherit': every tool that exists when this runs reads
-- "inherit", so every server's tools are gated exactly as before; an
-- import's upsert leaves the column alone, so a declaration outlives the
-- imports that follow it.
--
-- Text labels rather than integers, and the column declared without a type
-- name (no affinity, as the server's flag): a raw write keeps its storage
-- class, and the CHECK takes exactly the four labels as text and nothing
-- else — no number, no other case, no blanks around them. The reading is
-- fail-closed regardless: each state only from its own label, compared
-- exactly; anything else reads as "approval required", never as "blocked"
-- and never as "inherit".
ALTER TABLE mcp_tool ADD COLUMN approval NOT NULL DEFAULT 'inherit'
    CHECK (typeof(approval) = 'text'
           AND approval IN ('inherit', 'required', 'not_required', 'blocked'));

-- Who declared it, where the name came from, through which channel, when,
-- and — for `not_required` — the digest of the definition they reviewed.
ALTER TABLE mcp_tool ADD COLUMN approval_declared_by TEXT;
ALTER TABLE mcp_tool ADD COLUMN approval_declared_source TEXT;
ALTER TABLE mcp_tool ADD COLUMN approval_declared_channel TEXT;
ALTER TABLE mcp_tool ADD COLUMN approval_declared_digest TEXT;
ALTER TABLE mcp_tool ADD COLUMN approval_declared_at BIGINT;
