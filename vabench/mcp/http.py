"""The MCP server over streamable HTTP, behind the review app's access rules
(:mod:`vabench.review.access`): the Host header must name this server, a token is needed where
there is one (always when it listens beyond loopback: ``Authorization: Bearer``), and a browser's
write must come from the same origin. A session's ``DELETE`` (the client closing it) leaves its
episode if that is still in play."""

from __future__ import annotations

import anyio
from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse

from vabench.mcp.server import Sessions, build
from vabench.review.access import Access, given_token, refusal

PATH = "/mcp"


def app_of(sessions: Sessions, rules: Access):
    """The ASGI app: the access rules, then the MCP session manager's app."""
    server = build(sessions, http=True)
    inner = server.streamable_http_app(streamable_http_path=PATH, host="0.0.0.0")  # Host: checked by the rules

    async def app(scope, receive, send):
        if scope["type"] != "http":  # lifespan: the session manager's start and stop
            return await inner(scope, receive, send)
        headers = Headers(scope=scope)
        token = given_token(scope.get("query_string", b"").decode(), {}, headers.get("authorization"), rules)
        refused = refusal(rules, scope["method"], headers, token)
        if refused is not None:
            return await PlainTextResponse(refused.error, status_code=refused.status)(scope, receive, send)
        await inner(scope, receive, send)
        key = headers.get("mcp-session-id")
        if scope["method"] == "DELETE" and key:
            with anyio.CancelScope(shield=True):
                await sessions.end(key)

    return app
