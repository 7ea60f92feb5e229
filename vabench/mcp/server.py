"""The MCP server over a run's seats: each client session plays the run's next unplayed episode.

A session is one stdio connection (one process per client, as MCP hosts start stdio servers), or
one streamable-HTTP session (its ``Mcp-Session-Id``). The session's first request claims its
episode (:class:`vabench.run.seat.Seats`); the row's model is ``mcp:<name>/<version>`` from the
client's ``initialize`` unless the run's config names one (``model.name``). A session that ends
before its episode does (stdio closed, an HTTP ``DELETE``, the server stopped) leaves it: no row,
and the next session plays it again.

Over HTTP the server speaks the handshake era of the protocol only (its ``server/discover``
answers with an error, so a current client falls back to ``initialize``): a session is what
carries an episode, and the stateless era has none. A request that names no session is refused.

Nothing a handler meets crashes the server: a bad call is an MCP tool error (``isError``) with
the paper's text, and any other failure is one too, naming it; the episode's row is written by
its seat whatever the session does.
"""

from __future__ import annotations

import base64
import sys

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from vabench import __version__
from vabench.core.boundary import Answer, Command
from vabench.core.vocab import EndReason
from vabench.mcp import tools as t
from vabench.run.seat import Seat, Seats

STDIO = "stdio"  # the one session of a stdio server
NO_SESSION = "this server plays one episode per MCP session: connect with the initialize handshake (a session id)"
INSTRUCTIONS = (
    "Each session plays one episode of a VA-Bench run. Call observe to see the current images and robot state; "
    "each action tool is one of the paper's commands or camera actions and uses one step of the budget. Every "
    "result says the step, the budget (as the condition shows it) and the feedback, and says when the episode is over."
)


def model_name(ctx, named: str) -> str:
    """The row's model: the config's ``model.name``, else the client as it introduced itself."""
    if named:
        return named
    params = ctx.session.client_params
    info = params.client_info if params is not None else None
    if info is None:
        info = types.Implementation.model_validate((ctx.meta or {}).get("io.modelcontextprotocol/clientInfo") or {})
    return f"mcp:{info.name or 'client'}/{info.version or '0'}"[:120]


class Sessions:
    """Which seat each session plays (None: it found no episode left)."""

    def __init__(self, seats: Seats, named: str = "", log=None):
        self.seats, self.named = seats, named
        self.log = log or (lambda line: print(line, file=sys.stderr, flush=True))
        self.playing: dict[str, Seat | None] = {}
        self.locks: dict[str, anyio.Lock] = {}

    async def seat(self, ctx) -> Seat | None:
        key = session_key(ctx)
        lock = self.locks.setdefault(key, anyio.Lock())
        async with lock:
            if key not in self.playing:
                name = model_name(ctx, self.named)
                seat = await anyio.to_thread.run_sync(self.seats.take, name)
                self.playing[key] = seat
                what = f"plays {seat.spec.key} (attempt {seat.attempt})" if seat else "found no unplayed episode"
                self.log(f"session {key[:12]} ({name}) {what}")
            return self.playing[key]

    async def end(self, key: str) -> None:
        """A session is over: an episode still in play is left (played again by a later session)."""
        seat = self.playing.pop(key, None)
        self.locks.pop(key, None)
        if seat is not None and not seat.over:
            await anyio.to_thread.run_sync(seat.leave)
            self.log(f"session {key[:12]} ended before its episode did: {seat.spec.key} will be played again")


def session_key(ctx) -> str:
    request = ctx.request
    if request is None:
        return STDIO
    key = request.headers.get("mcp-session-id")
    if not key:
        raise MCPError(code=-32600, message=NO_SESSION)
    return key


def text_result(text: str, error: bool = False, images: list[bytes] = ()) -> types.CallToolResult:
    content: list = [types.TextContent(text=text)]
    content += [types.ImageContent(data=base64.b64encode(b).decode(), mime_type="image/jpeg") for b in images]
    return types.CallToolResult(content=content, is_error=error)


def build(sessions: Sessions, http: bool = False) -> Server:
    """The MCP server: ``list_tools`` and ``call_tool`` over ``sessions``."""

    async def list_tools(ctx, params) -> types.ListToolsResult:
        seat = await sessions.seat(ctx)
        listed = t.tools_of(seat) if seat is not None else [t.Tool(t.OBSERVE, "No unplayed episode is left.", {})]
        return types.ListToolsResult(
            tools=[
                types.Tool(name=x.name, description=x.description, input_schema=x.schema or {"type": "object"})
                for x in listed
            ]
        )

    async def call_tool(ctx, params) -> types.CallToolResult:
        try:
            return await _call(sessions, ctx, params.name, params.arguments or {})
        except MCPError:
            raise
        except Exception as e:  # never the server's end: the call fails, the session and the row go on
            sessions.log(f"tool {params.name} failed: {type(e).__name__}: {e}")
            return text_result(f"server error on {params.name}: {type(e).__name__}: {e}", error=True)

    server = Server(
        "vabench",
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    if http:

        async def handshake_only(ctx, params):
            raise MCPError(code=-32601, message="this server keeps an episode per session: use initialize")

        server.add_request_handler("server/discover", types.RequestParams, handshake_only)
    return server


async def _call(sessions: Sessions, ctx, name: str, args: dict) -> types.CallToolResult:
    seat = await sessions.seat(ctx)
    if seat is None:
        return text_result(f"no unplayed episode is left in run {sessions.seats.run.run_id}", error=True)
    if name == t.OBSERVE:
        turn = seat.turn()
        shown = t.images_of(turn.observation, seat) if turn.observation is not None else []
        return text_result(t.result_text(turn, seat), images=shown)
    if seat.over:
        how = seat.end or "its session left it"
        why = f"episode {seat.spec.key} is over ({how}); a new session plays the run's next one"
        return text_result(why, error=True)
    answer: Answer = t.answer_of(name, args, seat)
    turn = await anyio.to_thread.run_sync(seat.answer, answer)
    moved = isinstance(answer, Command) and turn.observation is not None and not turn.refused
    shown = t.images_of(turn.observation, seat) if moved else []
    refused = bool(turn.refused) or turn.end == EndReason.REPAIRS_EXHAUSTED  # the last refusal ended it
    return text_result(t.result_text(turn, seat, answer), error=refused, images=shown)
