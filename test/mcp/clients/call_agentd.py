"""Calls agentd's /mcp with the official Python MCP client (streamablehttp_client + ClientSession).

Usage: call_agentd.py URL TOKEN list
       call_agentd.py URL TOKEN call TOOL MESSAGE [SESSION_ID]
Prints one JSON object: {"tools": [...]} or {"isError", "text", "structured", "progress"}.
"""

import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client


async def main() -> None:
    url, token, verb = sys.argv[1], sys.argv[2], sys.argv[3]
    headers = {"Authorization": f"Bearer {token}"} if token != "-" else {}
    async with streamablehttp_client(url, headers=headers) as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            if verb == "list":
                tools = await session.list_tools()
                print(json.dumps({"tools": [t.name for t in tools.tools]}))
                return
            tool, message = sys.argv[4], sys.argv[5]
            args = {"message": message}
            if len(sys.argv) > 6:
                args["session_id"] = sys.argv[6]
            progress = []

            async def on_progress(value, total, msg):
                progress.append(msg)

            result = await session.call_tool(tool, args, progress_callback=on_progress)
            text = "".join(c.text for c in result.content if c.type == "text")
            print(
                json.dumps(
                    {"isError": result.isError, "text": text, "structured": result.structuredContent, "progress": progress}
                )
            )


asyncio.run(main())
