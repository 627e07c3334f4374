-- Whether the tools of a server wait for a human's approval: an operator's
-- declaration, never derived from anything the server says.
--
-- NOT NULL DEFAULT 1: every row that exists when this runs lands on
-- "approval required", and nothing corrects it afterwards. No upgrade step
-- writes 0 on servers that were already importing tools: it could not tell a
-- 1 the schema wrote from a 1 an operator chose, and would switch approval
-- off on servers nobody judged. Turning approval off is an operator's
-- per-server action, through the store's typed API.
--
-- The column is declared without a type name, which gives it no numeric
-- affinity (SQLite's BLOB affinity), on purpose. With INTEGER affinity SQLite
-- turns raw writes of '0', '00', ' 0', '0.0', '-0' and '1e-400' into the
-- integer 0 before any CHECK sees them — a zero nobody typed as "off". Here
-- such a write keeps its storage class, and the CHECK refuses everything but
-- the integers 0 and 1. The reading is fail-closed regardless: only an
-- integer 0 means "no approval".
ALTER TABLE mcp_server ADD COLUMN requires_approval NOT NULL DEFAULT 1
    CHECK (typeof(requires_approval) = 'integer' AND requires_approval IN (0, 1));
