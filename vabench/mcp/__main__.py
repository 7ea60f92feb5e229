"""``python -m vabench.mcp [--http] [--host H] [--port P] [--token T] [KEY=VALUE ...]``: a run's
episodes played by MCP clients, one episode per client session (docs/mcp.md).

The words are the launcher's (``tasks``, ``seeds``, ``protocol``, ``robot``, ``perturbation``,
``results_dir``, ``run_id``, ...), checked by the launcher's own checks; ``model`` is ``mcp`` (the
row names the client) unless given. Without ``--http`` the server speaks MCP over stdio (what MCP
hosts start); with it, streamable HTTP at ``http://HOST:PORT/mcp``, loopback by default; bound to
another interface it needs a token (``--token``, ``$VABENCH_MCP_TOKEN``, else one is made and
printed), sent as ``Authorization: Bearer``, and checks the Host header as the review app does.
Exit 0 when the server ends; 2: refused input (one line)."""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys
from pathlib import Path

from vabench.core.errors import ConfigError, command, flat

PROG = "python -m vabench.mcp"
TOKEN_ENV = "VABENCH_MCP_TOKEN"


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def run_of(words: list[str]):
    """The run the words name, composed and validated as the launcher does (model=mcp unless named)."""
    from omegaconf import OmegaConf

    from vabench.launch.words import canonical, composed, misspelt, wrong_word
    from vabench.run.config.run import from_config

    words = canonical(words)
    if not any(w.partition("=")[0] == "model" for w in words):
        words = ["model=mcp", *words]
    bad = next((w for w in words if "=" not in w or w.startswith("-")), None)
    if bad:
        raise ConfigError(f"'{bad}' is not KEY=VALUE (the launcher's words: tasks=[...] seeds=N run_id=NAME ...)")
    why = wrong_word(words) or misspelt(words)
    if why:
        raise ConfigError(why)
    cfg = OmegaConf.to_container(OmegaConf.create(composed(words)), resolve=True, throw_on_missing=True)
    return from_config(cfg, Path(cfg["results_dir"]) / str(cfg["run_id"]), log=_say)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    p.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
    p.add_argument("--host", default="127.0.0.1", help="the address to listen on (HTTP; default loopback)")
    p.add_argument("--port", type=int, default=8770, help="the port (HTTP; 0: one the system picks)")
    p.add_argument("--token", default=os.environ.get(TOKEN_ENV), help=f"the bearer token (default ${TOKEN_ENV})")
    p.add_argument("words", nargs="*", help="the launcher's words: tasks=[...] seeds=N protocol=P run_id=NAME ...")
    return p


@command(PROG)
def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    run = run_of(args.words)
    from vabench.mcp.server import Sessions
    from vabench.run.seat import Seats

    seats = Seats(run, log=_say)
    named = run.model.name or ""  # model.name: the rows name it; else each client as it introduced itself
    try:
        if args.http:
            _serve_http(Sessions(seats, named, _say), args)
        else:
            _serve_stdio(Sessions(seats, named, _say))
    finally:
        seats.close()
    return 0


def _serve_stdio(sessions) -> None:
    import anyio
    from mcp.server.stdio import stdio_server

    from vabench.mcp.server import build

    server = build(sessions)

    async def serve() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    _say(f"{PROG}: run {sessions.seats.run.run_dir} over stdio")
    anyio.run(serve)


def _serve_http(sessions, args) -> None:
    import uvicorn

    from vabench.mcp.http import app_of
    from vabench.review import access
    from vabench.review.__main__ import listen

    sock = listen(args.host, args.port)
    with sock:
        address, port = sock.getsockname()[:2]
        beyond = not ipaddress.ip_address(address).is_loopback
        token = access.check_token(args.token) if args.token else (access.new_token() if beyond else None)
        rules = access.Access(token, access.host_names(None, beyond), port)
        shown = address if ":" not in address else f"[{address}]"
        _say(f"{PROG}: run {sessions.seats.run.run_dir} at http://{shown}:{port}/mcp")
        if token and not args.token:
            _say(f"{PROG}: its token (Authorization: Bearer): {token}")
        uvicorn.Server(uvicorn.Config(app_of(sessions, rules), log_level="warning")).run(sockets=[sock])


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except KeyboardInterrupt:
        _say(f"{PROG}: interrupted")
        raise SystemExit(130) from None
    except Exception as e:  # a crash: one line first, the traceback after
        _say(f"{PROG}: {flat(e)}")
        raise
