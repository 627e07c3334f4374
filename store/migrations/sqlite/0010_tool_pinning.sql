-- Tool pinning. An operator who turns approval off for a server judged the
-- tools it had then. Each tool's definition — its name, description, input
-- schema and annotations, as canonical JSON — is pinned when an operator
-- judges it: when approval is turned off for its server, and when the
-- operator accepts it (`toolgate server accept`). On a server whose approval
-- is off, a tool whose definition is not the pinned one — new since, or
-- changed since — is quarantined: it requires approval until accepted.
--
-- Nothing is pinned by this migration: the tools of servers whose approval
-- is already off are quarantined until an operator accepts them, because no
-- record says which definitions were judged. That tightens; it never
-- relaxes.

-- `definition` is written by every import (the tool as the server lists it
-- now); `pinned_definition` by the operator's judgement. A provider compares
-- the two as text, so hydration parses nothing to tell.
ALTER TABLE mcp_tool ADD COLUMN definition TEXT;
ALTER TABLE mcp_tool ADD COLUMN pinned_definition TEXT;
ALTER TABLE mcp_tool ADD COLUMN pinned_at BIGINT;
