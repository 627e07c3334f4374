-- People and channels: how each decision and choice reached the record (`console`,
-- `inbox`, `elicitation`, `proxy`, `library`; NULL in rows written before
-- channels were kept), and, per server, whether its operator lets a
-- requester answer through their own MCP client (elicitation) — off unless
-- an operator turns it on, read fail-closed: only a stored 1 is on.

ALTER TABLE decision ADD COLUMN channel TEXT;

ALTER TABLE mcp_server ADD COLUMN elicitation BIGINT NOT NULL DEFAULT 0;

ALTER TABLE execution_choice ADD COLUMN channel TEXT;
