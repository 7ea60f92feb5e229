"""``python -m vabench.review``: serve the review app, (re)make videos, export labels."""

from __future__ import annotations

import argparse
import errno
import ipaddress
import os
import socket
import sys
from pathlib import Path

from vabench.analysis import labels as L
from vabench.core.errors import CannotListen, command
from vabench.results.layout import read_run_info
from vabench.results.media import DEMO_VIDEO, demo_video, episode_video
from vabench.results.recordfile import EVENTS, VIDEO_NAME, recording_frames

from . import access, runs

COMMANDS = ("serve", "videos", "labels")
DEFAULT_FPS = 2.0


def serve(args) -> int:
    import uvicorn

    from .app import create_app

    sock = listen(args.host, args.port)
    with sock:
        address, port = sock.getsockname()[:2]
        beyond = not ipaddress.ip_address(address).is_loopback
        token = access.check_token(args.token) if args.token else (access.new_token() if beyond else None)
        rules = access.Access(token, access.host_names(args.allow_host, beyond), port)
        app = create_app([Path(f) for f in args.folders], rules)
        for line in announce(args.host, address, port, token, echo=not args.token):
            print(line, flush=True)
        uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
    return 0


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port`` (port 0: one the system picks), bound before the URL is
    printed, so a busy port is one line naming the fix instead of a URL and then a traceback."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        family, kind, proto, _, where = min(found, key=lambda a: a[0] != socket.AF_INET)  # IPv4 first
    except socket.gaierror:
        raise CannotListen(f"no such address to listen on: --host {host}") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a port in TIME_WAIT is free
        sock.bind(where)
        sock.listen(2048)
    except OSError as e:
        sock.close()
        if e.errno == errno.EADDRINUSE:
            fix = "pass --port N for another, or --port 0 to pick a free one"
            raise CannotListen(f"port {port} on {host} is in use: {fix}") from None
        raise CannotListen(f"cannot listen on {host} port {port}: {e.strerror}") from None
    return sock


def announce(host: str, address: str, port: int, token: str | None, echo: bool) -> list[str]:
    """What the app prints on start: who can reach it (when that is more than this machine) and
    its URL, with the token when ``echo`` (one it made; a token given with --token is not echoed)."""
    lines = []
    wildcard = ipaddress.ip_address(address).is_unspecified
    if not ipaddress.ip_address(address).is_loopback:
        where = "every network interface of this machine" if wildcard else address
        where += f" ({host})" if host != address else ""
        lines.append(
            f"vabench review: listening on {where}: anyone who can reach it on port {port} "
            "and has the token can read these runs and save labels; plain HTTP, see docs/review.md"
        )
    name = socket.gethostname() if wildcard else host
    url = f"http://{f'[{name}]' if ':' in name else name}:{port}/"
    if token and echo:
        url += f"?{access.TOKEN_PARAM}={token}"
    note = "the token given with --token; " if token and not echo else ""
    lines.append(f"vabench review: {url}  ({note}Ctrl-C stops)")
    return lines


def _fps(root: Path, override: float | None) -> float:
    if override:
        return override
    info = read_run_info(root)  # the run's own setting, from the config it ran with
    return (info.fps if info else None) or DEFAULT_FPS


def videos(args) -> int:
    made = kept = 0
    for folder in map(Path, args.folders):
        fps = _fps(folder, args.fps)
        for record in sorted(folder.rglob(EVENTS)):
            if (record.parent / VIDEO_NAME).exists() and not args.force:
                kept += 1
            elif recording_frames(record.parent):
                episode_video(record.parent, fps, args.size)
                made += 1
    for root in args.demos or []:
        for manifest in sorted(Path(root).glob("*/demo.json")):
            if args.force or not (manifest.parent / DEMO_VIDEO).exists():
                demo_video(manifest.parent)
                made += 1
    print(f"vabench.review: made {made} video(s); {kept} already there (--force remakes them)")
    return 0


def labels(args) -> int:
    from .app import export

    root = Path(args.folder)
    text = export(root, runs.outcomes(root)[0])
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"vabench.review: wrote {len(text.splitlines()) - 1} label row(s) to {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def _fps_value(text: str) -> float:
    try:
        fps = float(text)
    except ValueError:
        fps = float("nan")
    if not 0.1 <= fps <= 60:
        raise argparse.ArgumentTypeError(f"fps must be a number in [0.1, 60], got {text!r}")
    return fps


def _port(text: str) -> int:
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"port must be a number in 0..65535 (0: a free one), got {text!r}")
    return int(text)


def _size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"size must be WxH, e.g. 640x480, got {text!r}") from None
    if w < 16 or h < 16 or w % 2 or h % 2:
        raise argparse.ArgumentTypeError(f"size must be even and at least 16x16 (H.264), got {text!r}")
    return w, h


def parser(command: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"python -m vabench.review{'' if command == 'serve' else ' ' + command}")
    if command == "serve":
        p.description = "Review and annotate the episodes of run folders in a local web app."
        p.add_argument("folders", nargs="+", metavar="RUN_FOLDER")
        p.add_argument("--host", default="127.0.0.1", help="listen address (default 127.0.0.1: this machine only)")
        p.add_argument("--port", type=_port, default=8765, help="default 8765; 0 picks a free one")
        p.add_argument(
            "--token",
            default=os.environ.get(access.TOKEN_ENV),
            help="the token every request needs (default: $VABENCH_REVIEW_TOKEN, else one is made when --host is "
            "not loopback; loopback needs none unless given)",
        )
        p.add_argument(
            "--allow-host",
            action="append",
            metavar="NAME",
            help="a host name browsers use to reach the app besides its addresses, localhost and this machine's "
            "names (a reverse proxy's, a DNS alias); repeatable",
        )
    elif command == "videos":
        p.description = "Make the mp4 of every episode (from its recording views) and of demonstrations."
        p.add_argument("folders", nargs="*", metavar="RUN_FOLDER")
        p.add_argument("--force", action="store_true", help="remake videos that exist")
        p.add_argument("--fps", type=_fps_value, help="frames (steps) per second; default: the run's recording.fps")
        p.add_argument("--size", type=_size, metavar="WxH", help="resize the frames (even numbers), e.g. 640x480")
        p.add_argument("--demos", nargs="+", metavar="DEMO_ROOT", help="also the demonstrations under these roots")
    else:
        p.description = f"Every annotator's current labels ({L.ANNOTATIONS}/) with the episodes' identity, as CSV."
        p.add_argument("folder", metavar="RUN_FOLDER")
        p.add_argument("--out", metavar="CSV", help="write here instead of standard output")
    return p


@command("vabench.review")
def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv.pop(0) if argv and argv[0] in COMMANDS else "serve"
    args = parser(command).parse_args(argv)
    return {"serve": serve, "videos": videos, "labels": labels}[command](args)


if __name__ == "__main__":
    raise SystemExit(main())
