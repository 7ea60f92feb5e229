"""``python -m vabench.launch model=human human.operators=N ...``: the study's server. It binds its
port, prints one URL per operator and serves their pages (:mod:`.app`) until every episode of the
run has its row (then it ends by itself) or Ctrl-C. Ctrl-C leaves the episodes in play without a
row (their partial records are set aside when they are played again): rerunning the same run_id
resumes the study, each finished episode kept and each unfinished one played afresh."""

from __future__ import annotations

import ipaddress
import os
import socket

from vabench.review import access
from vabench.review.__main__ import listen
from vabench.run.config.run import RunConfig
from vabench.run.seat import Seats

from .app import PLAY, create_app
from .operators import Operator

OPERATOR_LINE = "vabench human: operator "  # then "<name>: <url>", one line per operator
READY = "vabench human: Ctrl-C stops"  # the last line printed before the server runs


def printed_urls(lines) -> dict[str, str]:
    """Each operator's URL, read from the lines a study printed, up to its ready line (for a
    script or a test that starts ``python -m vabench.launch model=human``)."""
    found = {}
    for line in lines:
        if line.startswith(OPERATOR_LINE):
            name, url = line[len(OPERATOR_LINE) :].split(": ", 1)
            found[name] = url.strip()
        if line.startswith(READY):
            break
    return found


def operator_names(n: int) -> list[str]:
    return [f"op{i}" for i in range(1, n + 1)]


def urls(host: str, address: str, port: int, token: str | None, names: list[str]) -> list[str]:
    """One line per operator with its URL (and the token, which the page turns into a cookie)."""
    name = socket.gethostname() if ipaddress.ip_address(address).is_unspecified else host
    root = f"http://{f'[{name}]' if ':' in name else name}:{port}{PLAY}"
    query = f"?{access.TOKEN_PARAM}={token}" if token else ""
    return [f"{OPERATOR_LINE}{n}: {root}/{n}{query}" for n in names]


def serve(run: RunConfig, log=print) -> bool:
    """Serve the study; True once every episode has its row, False when stopped before."""
    import uvicorn

    human = run.human
    sock = listen(human.host, human.port)
    with sock:
        address, port = sock.getsockname()[:2]
        beyond = not ipaddress.ip_address(address).is_loopback
        given = os.environ.get(access.TOKEN_ENV)
        token = access.check_token(given) if given else (access.new_token() if beyond else None)
        rules = access.Access(token, access.host_names(None, beyond), port)
        seats = Seats(run, log)
        names = operator_names(human.operators)
        model = run.model.name or run.model.id
        operators = {n: Operator(n, seats, model, run.render, run.harness.history_actions) for n in names}
        app = create_app(operators, rules, on_done=lambda: stop(server))
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        if beyond:
            print(f"vabench human: listening beyond loopback, port {port}: anyone with the token can play", flush=True)
        for line in urls(human.host, address, port, None if given else token, names):
            print(line, flush=True)
        if given:
            print(f"vabench human: each URL needs ?token= with the token in ${access.TOKEN_ENV}", flush=True)
        print(f"{READY} (finished episodes are kept; the run_id resumes the rest)", flush=True)
        try:
            server.run(sockets=[sock])
        except KeyboardInterrupt:
            return False
        finally:
            seats.close()
    return not seats.pending(model)


def stop(server) -> None:
    server.should_exit = True
