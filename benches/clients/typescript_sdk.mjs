// A call made through the official MCP TypeScript SDK's stdio client, timed:
// the same tool call to two servers started as child processes — the
// upstream directly, and `toolgate gateway` in front of it — alternated call
// by call, so both see the same machine. Prints one JSON line: the medians
// and the fastest, in microseconds, and their ratio.
//
//   node typescript_sdk.mjs CALLS -- DIRECT_CMD... -- GATEWAY_CMD...
//
// The SDK is resolved from the working directory's node_modules
// (`npm install @modelcontextprotocol/sdk`).
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

const require = createRequire(pathToFileURL(process.cwd() + "/"));
const { Client } = await import(pathToFileURL(require.resolve("@modelcontextprotocol/sdk/client/index.js")));
const { StdioClientTransport } = await import(pathToFileURL(require.resolve("@modelcontextprotocol/sdk/client/stdio.js")));

const args = process.argv.slice(2);
const calls = Number(args[0]);
const first = args.indexOf("--");
const second = args.indexOf("--", first + 1);
const directCmd = args.slice(first + 1, second);
const gatewayCmd = args.slice(second + 1);

async function connect(cmd) {
  const client = new Client({ name: "bench", version: "1" });
  await client.connect(new StdioClientTransport({ command: cmd[0], args: cmd.slice(1), stderr: "inherit" }));
  return client;
}

const direct = await connect(directCmd);
const gateway = await connect(gatewayCmd);
const call = (client, name) => client.callTool({ name, arguments: { id: 0 } });
const a = await call(direct, "read_note");
const b = await call(gateway, "notes__read_note");
if (a.isError || b.isError || a.content[0].text !== b.content[0].text) {
  console.error("the answers differ", JSON.stringify(a), JSON.stringify(b));
  process.exit(1);
}
for (let i = 0; i < 50; i++) {
  await call(direct, "read_note");
  await call(gateway, "notes__read_note");
}
const times = { direct: [], gateway: [] };
for (let i = 0; i < calls; i++) {
  for (const [name, client, tool] of [["direct", direct, "read_note"], ["gateway", gateway, "notes__read_note"]]) {
    const start = process.hrtime.bigint();
    const result = await call(client, tool);
    times[name].push(Number(process.hrtime.bigint() - start) / 1000);
    if (result.isError) {
      console.error(name, JSON.stringify(result));
      process.exit(1);
    }
  }
}
const median = (xs) => {
  const s = [...xs].sort((x, y) => x - y);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const out = {};
for (const [name, t] of Object.entries(times)) {
  out[name] = { median_us: median(t), fastest_us: Math.min(...t) };
}
out.ratio = out.gateway.median_us / out.direct.median_us;
out.calls = calls;
console.log(JSON.stringify(out));
await direct.close();
await gateway.close();
process.exit(0);
