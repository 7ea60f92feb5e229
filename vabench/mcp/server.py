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

Under ``summary=own`` a session starts in its seat's summary stage (:mod:`vabench.mcp.tools`):
``demonstration`` and ``write_summary`` answer it, any other tool is refused until the summary is
written, and the server then tells the client its tool list changed.
"""

from __future__ import annotations

import base64
import mimetypes
import sys
from pathlib import Path

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from vabench import __version__
from vabench.core.boundary import Answer, Command, ToolCall
from vabench.core.vocab import EndReason
from vabench.mcp import tools as t
from vabench.run.seat import Seat, Seats
from vabench.run.study import DEMONSTRATION, WRITE_SUMMARY, Shown

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


def text_result(
    text: str, error: bool = False, images: list[bytes] = (), files: tuple[Path, ...] = ()
) -> types.CallToolResult:
    """A tool's result: its text, then ``images`` (a render's JPEGs), then image ``files`` (demo frames)."""
    content: list = [types.TextContent(text=text)]
    content += [types.ImageContent(data=base64.b64encode(b).decode(), mime_type="image/jpeg") for b in images]
    for f in files:
        mime = mimetypes.guess_type(f.name)[0] or "image/png"
        content.append(types.ImageContent(data=base64.b64encode(f.read_bytes()).decode(), mime_type=mime))
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
    if seat.study is not None or name in (DEMONSTRATION, WRITE_SUMMARY):
        return await _stage(ctx, seat, name, args)
    if name == t.OBSERVE:
        turn = seat.turn()
        shown = t.images_of(turn.observation, seat) if turn.observation is not None else []
        said = [t.result_text(turn, seat), t.summary_text(seat)]
        return text_result("\n".join(x for x in said if x), images=shown)
    if seat.over:
        how = seat.end or "its session left it"
        why = f"episode {seat.spec.key} is over ({how}); a new session plays the run's next one"
        return text_result(why, error=True)
    answer: Answer = t.answer_of(name, args, seat)
    turn = await anyio.to_thread.run_sync(seat.answer, answer)
    answered = turn.observation is not None and not turn.refused
    shown = t.images_of(turn.observation, seat) if answered and isinstance(answer, Command) else []
    if answered and isinstance(answer, ToolCall):  # a tool's own images (camera.history), as a model gets them
        shown = t.tool_images(turn.observation, seat)
    refused = bool(turn.refused) or turn.end == EndReason.REPAIRS_EXHAUSTED  # the last refusal ended it
    return text_result(t.result_text(turn, seat, answer), error=refused, images=shown)


async def _stage(ctx, seat: Seat, name: str, args: dict) -> types.CallToolResult:
    """A call in the seat's summary stage (or of a stage tool after it)."""
    study = seat.study
    if study is None:
        return text_result(f"{name}: this episode has no summary stage now; its tools are listed", error=True)
    if name == t.OBSERVE:
        return text_result(study.intro)
    if name == DEMONSTRATION:
        shown = await anyio.to_thread.run_sync(study.demonstration, args)
        return text_result(shown.text, error=shown.refused, files=shown.images)
    if name != WRITE_SUMMARY:
        why = f"write your summary first: study the demonstration with {DEMONSTRATION}, then call {WRITE_SUMMARY}"
        return text_result(f"{name} is not available yet ({why}); the episode's tools follow", error=True)
    out = await anyio.to_thread.run_sync(seat.write_summary, args)
    if isinstance(out, Shown):
        return text_result(out.text, error=True)
    try:
        await ctx.session.send_tool_list_changed()
    except Exception:  # a client that cannot hear it still finds the tools by name
        pass
    shown = t.images_of(out.observation, seat) if out.observation is not None else []
    said = ["Summary saved; the episode starts and its tools are listed now.", t.summary_text(seat)]
    return text_result("\n".join([*said, t.result_text(out, seat)]), images=shown)
