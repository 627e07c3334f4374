"""A call made through the official MCP Python SDK's stdio client, timed:
the same tool call to two servers started as child processes — the upstream
directly, and `toolgate gateway` in front of it — alternated call by call,
so both see the same machine. Prints one JSON line: the medians and the
fastest, in microseconds, and their ratio.

    python3 python_sdk.py CALLS -- DIRECT_CMD... -- GATEWAY_CMD...
"""
import asyncio
import json
import statistics
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def split(argv):
    calls = int(argv[0])
    rest = argv[1:]
    first = rest.index("--")
    second = rest.index("--", first + 1)
    return calls, rest[first + 1:second], rest[second + 1:]


async def main():
    calls, direct_cmd, gateway_cmd = split(sys.argv[1:])
    direct_params = StdioServerParameters(command=direct_cmd[0], args=direct_cmd[1:])
    gateway_params = StdioServerParameters(command=gateway_cmd[0], args=gateway_cmd[1:])
    async with stdio_client(direct_params) as (dr, dw), stdio_client(gateway_params) as (gr, gw):
        async with ClientSession(dr, dw) as direct, ClientSession(gr, gw) as gateway:
            await direct.initialize()
            await gateway.initialize()
            direct_tool = "read_note"
            gateway_tool = "notes__read_note"
            # The answers must be the same note before anything is timed.
            a = await direct.call_tool(direct_tool, {"id": 0})
            b = await gateway.call_tool(gateway_tool, {"id": 0})
            if a.is_error or b.is_error or a.content[0].text != b.content[0].text:
                raise SystemExit(f"the answers differ: {a} / {b}")
            for _ in range(50):
                await direct.call_tool(direct_tool, {"id": 0})
                await gateway.call_tool(gateway_tool, {"id": 0})
            times = {"direct": [], "gateway": []}
            for _ in range(calls):
                for name, session, tool in (("direct", direct, direct_tool), ("gateway", gateway, gateway_tool)):
                    start = time.perf_counter()
                    result = await session.call_tool(tool, {"id": 0})
                    times[name].append((time.perf_counter() - start) * 1e6)
                    if result.is_error:
                        raise SystemExit(f"{name}: {result}")
    out = {
        name: {"median_us": statistics.median(t), "fastest_us": min(t)}
        for name, t in times.items()
    }
    out["ratio"] = out["gateway"]["median_us"] / out["direct"]["median_us"]
    out["calls"] = calls
    print(json.dumps(out))


asyncio.run(main())
