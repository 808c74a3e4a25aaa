"""A minimal stdio MCP server for tests: one tool, `lookup`, that answers `ANSWER-42 for <q>`.

Newline-delimited JSON-RPC 2.0 on stdin/stdout; every call is appended to $MCP_LOG if set.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

TOOL = {
    "name": "lookup",
    "description": "Look a term up in the project's docs.",
    "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
}


def answer(method: str, params: dict[str, Any]) -> dict[str, Any]:
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "lookup", "version": "1.0"},
        }
    if method == "tools/list":
        return {"tools": [TOOL]}
    if method == "tools/call":
        query = (params.get("arguments") or {}).get("q", "")
        return {"content": [{"type": "text", "text": f"ANSWER-42 for {query}"}], "isError": False}
    if method == "ping":
        return {}
    raise KeyError(method)


def main() -> None:
    log = os.environ.get("MCP_LOG")
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        if log:
            with open(log, "a", encoding="utf-8") as fh:
                fh.write(json.dumps({"method": message.get("method")}) + "\n")
        if "id" not in message:
            continue  # a notification
        try:
            reply = {
                "jsonrpc": "2.0",
                "id": message["id"],
                "result": answer(message.get("method", ""), message.get("params") or {}),
            }
        except KeyError:
            reply = {
                "jsonrpc": "2.0",
                "id": message["id"],
                "error": {"code": -32601, "message": "method not found"},
            }
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
