"""A FastMCP server for agentd's MCP tests (stdio by default, --http PORT for Streamable HTTP).

Tools: forecast(city), fail(city) (a tool error), hang(tag) (never answers; records its start and its
cancellation in $WEATHER_EVENTS), crash() (the process exits), add_tool() (adds "late" and sends
notifications/tools/list_changed), whoami() (the X-Tenant header), pid(), idempotency_key() (the call's
_meta.idempotencyKey).
"""

import os
import sys

import anyio
from mcp.server.fastmcp import Context, FastMCP

mcp = FastMCP("weather")
EVENTS = os.environ.get("WEATHER_EVENTS")


def record(line: str) -> None:
    if EVENTS:
        with open(EVENTS, "a", encoding="utf-8") as f:
            f.write(line + "\n")


@mcp.tool()
def forecast(city: str) -> str:
    """The weather forecast for a city."""
    return f"{city}: sunny, 21 C (pid {os.getpid()})"


@mcp.tool()
def fail(city: str) -> str:
    """Always fails."""
    raise ValueError(f"no forecast for {city}")


@mcp.tool()
async def hang(tag: str) -> str:
    """Never answers."""
    record(f"started {tag}")
    try:
        await anyio.sleep(3600)
    finally:
        record(f"cancelled {tag}")
    return "unreachable"


@mcp.tool()
def crash() -> str:
    """Exits the server process."""
    os._exit(3)


@mcp.tool()
async def add_tool(ctx: Context) -> str:
    """Adds the tool "late" and tells the client its tool list changed."""

    def late() -> str:
        """A tool added while the server runs."""
        return "late tool here"

    mcp.add_tool(late)
    await ctx.session.send_tool_list_changed()
    return "added"


@mcp.tool()
def whoami(ctx: Context) -> str:
    """The X-Tenant header of the HTTP request that carried this call ("stdio" over stdio)."""
    request = ctx.request_context.request
    return request.headers.get("x-tenant", "none") if request is not None else "stdio"


@mcp.tool()
def idempotency_key(ctx: Context) -> str:
    """The idempotency key the client sent in the call's _meta ("none" without one)."""
    meta = ctx.request_context.meta
    return str(getattr(meta, "idempotencyKey", None) or "none")


@mcp.tool()
def pid() -> int:
    """The server's process ID."""
    return os.getpid()


if __name__ == "__main__":
    print(f"weather server starting (pid {os.getpid()})", file=sys.stderr, flush=True)
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        mcp.settings.host = "127.0.0.1"
        mcp.settings.port = int(sys.argv[2])
        mcp.run(transport="streamable-http")
    else:
        mcp.run()
