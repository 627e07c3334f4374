-- Whether the tools of a server wait for a human's approval: an operator's
-- declaration, never derived from anything the server says.
--
-- NOT NULL DEFAULT 'required': every row that exists when this runs lands on
-- "approval required", and nothing corrects it afterwards. No upgrade step
-- turns approval off on servers that were already importing tools: it could
-- not tell a default from an operator's choice, and would switch approval
-- off on servers nobody judged. Turning approval off is an operator's
-- per-server action, through the store's typed API.
--
-- The column is typed, and the type is an enumeration of two labels rather
-- than a boolean or an integer. PostgreSQL reads a boolean from 'f', 'false',
-- 'n', 'no', 'off', '0' and more, with any case and surrounding blanks, and
-- an integer column takes whatever number a careless script writes: many
-- spellings of "off" that nobody typed as the operator's decision. An enum
-- takes exactly its labels and nothing else — a write of anything but
-- 'required' or 'not_required' fails — and reads as a word in any client.
-- The reading stays fail-closed regardless: only the label 'not_required'
-- of this type means "no approval"; anything else, a missing column
-- included, means "approval required".
CREATE TYPE toolgate_approval AS ENUM ('required', 'not_required');

ALTER TABLE mcp_server ADD COLUMN requires_approval toolgate_approval NOT NULL DEFAULT 'required';
