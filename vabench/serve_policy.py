"""A small policy server speaking the openpi websocket protocol (docs/policy.md), for ``model=policy``.

    python -m vabench.serve_policy --demo                      # all-zero chunks: the agent holds still
    python -m vabench.serve_policy --script vectors.npy        # a fixed sequence of action vectors, then zeros
    python -m vabench.serve_policy --demo --port 8001 --host 0.0.0.0
    python -m vabench.serve_policy bc.pt                       # a checkpoint of experiments/train_bc.py (docs/learn.md)

Any :class:`Policy` plugs in: ``infer(obs) -> {"actions": (horizon, 7 x arms)}`` and ``metadata``;
:class:`PolicyServer` does the protocol (metadata on connect, one msgpack-numpy map per inference,
``server_timing`` added, the traceback as a text frame when ``infer`` raises, ``/healthz``). A
checkpoint is loaded by :func:`load` (vabench.learn.policy, the ``learn`` extra: torch, imported
only then); another kind of trained policy is one more ``Policy`` and a branch there.
The server binds the loopback interface unless ``--host`` says otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import http
import importlib.util
import sys
import threading
import time
import traceback
from abc import ABC, abstractmethod
from pathlib import Path

import numpy as np
from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode
from websockets.sync.server import Server, ServerConnection, serve

from vabench.agents.models.policy_actions import PER_ARM
from vabench.agents.models.policy_wire import pack, unpack
from vabench.core.errors import CannotListen, NotFound, command
from vabench.envs.state import FIELDS

STATE_KEY = "observation/state"  # the agent's default model.extra.state_key


class Policy(ABC):
    """What the server serves. ``infer`` gets the client's map (images, state, prompt) and returns a
    map holding ``actions``; ``reset`` is called when a client connects (a new session)."""

    metadata: dict = {}

    @abstractmethod
    def infer(self, obs: dict) -> dict: ...

    def reset(self) -> None:  # noqa: B027 (optional hook)
        """A client connected."""


def arms_in(obs: dict) -> int:
    """Controlled arms, from the length of the named state vector (vabench.envs.state)."""
    state = obs.get(STATE_KEY)
    return max(1, len(state) // len(FIELDS)) if state is not None else 1


class ZeroPolicy(Policy):
    """All-zero chunks: every vector is a no-op (one env step each, the gripper held)."""

    def __init__(self, horizon: int = 8):
        self.horizon = horizon
        self.metadata = {
            "policy": "zero",
            "horizon": horizon,
            "action": "7 per arm: dx dy dz droll dpitch dyaw gripper",
        }

    def infer(self, obs: dict) -> dict:
        return {"actions": np.zeros((self.horizon, PER_ARM * arms_in(obs)), dtype=np.float32)}


class ScriptedPolicy(Policy):
    """A fixed sequence of vectors, ``horizon`` per chunk from where the last chunk ended, then zeros;
    the sequence starts over when a client connects."""

    def __init__(self, vectors: np.ndarray, horizon: int = 8):
        self.vectors, self.horizon, self.cursor = np.asarray(vectors, dtype=np.float64), horizon, 0
        self.metadata = {"policy": "scripted", "horizon": horizon, "length": len(self.vectors)}

    def reset(self) -> None:
        self.cursor = 0

    def infer(self, obs: dict) -> dict:
        chunk = self.vectors[self.cursor : self.cursor + self.horizon]
        self.cursor += len(chunk)
        if len(chunk) < self.horizon:
            pad = np.zeros((self.horizon - len(chunk), self.vectors.shape[1]))
            chunk = np.concatenate([chunk, pad]) if len(chunk) else pad
        return {"actions": chunk}


class PolicyServer:
    """Serves one policy to any number of clients (one thread each; ``infer`` runs one at a time)."""

    def __init__(self, policy: Policy, host: str = "127.0.0.1", port: int = 8000):
        self.policy, self.lock = policy, threading.Lock()
        self.server: Server = serve(
            self._session, host, port, compression=None, max_size=None, process_request=self._health
        )

    @property
    def port(self) -> int:
        return self.server.socket.getsockname()[1]

    def start(self) -> PolicyServer:
        """Serve in a background thread (tests, embedding); ``shutdown()`` stops it."""
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def shutdown(self) -> None:
        self.server.shutdown()

    def _health(self, connection: ServerConnection, request):
        if request.path == "/healthz":
            return connection.respond(http.HTTPStatus.OK, "OK\n")
        return None

    def _session(self, ws: ServerConnection) -> None:
        ws.send(pack(self.policy.metadata))
        with self.lock:
            self.policy.reset()
        with contextlib.suppress(ConnectionClosed):  # a client that leaves without closing ends its session
            self._serve(ws)

    def _serve(self, ws: ServerConnection) -> None:
        for frame in ws:
            started = time.monotonic()
            try:
                with self.lock:
                    out = dict(self.policy.infer(unpack(frame)))
            except Exception:  # the protocol's way: the traceback as text, then close
                ws.send(traceback.format_exc())
                ws.close(CloseCode.INTERNAL_ERROR, "Internal server error. Traceback included in previous frame.")
                return
            out["server_timing"] = {"infer_ms": (time.monotonic() - started) * 1000}
            ws.send(pack(out))


DEFAULT_HORIZON = 8  # vectors per chunk of --demo and --script


def load(args: argparse.Namespace) -> Policy:
    """The policy the command line names."""
    horizon = args.horizon or DEFAULT_HORIZON
    if args.script:
        path = Path(args.script)
        if not path.is_file():
            raise NotFound(f"--script {path}: no such file (a .npy of shape (steps, 7 x arms))")
        return ScriptedPolicy(np.load(path), horizon)
    if args.demo:
        return ZeroPolicy(horizon)
    return checkpoint(Path(args.checkpoint), args.horizon)


def checkpoint(path: Path, horizon: int | None = None) -> Policy:
    """A checkpoint of experiments/train_bc.py (docs/learn.md); ``horizon``: vectors served per
    inference (None: the checkpoint's default, 1)."""
    if not path.is_file():
        raise NotFound(f"{path}: no such checkpoint; train one with python experiments/train_bc.py (docs/learn.md)")
    if importlib.util.find_spec("torch") is None:
        raise NotFound("serving a checkpoint needs the learn extra (torch): pip install 'vabench[learn]'")
    from vabench.learn.policy import LearnedPolicy

    return LearnedPolicy(path, horizon)  # has Policy's members (metadata, infer, reset); CheckpointError: one line


@command("python -m vabench.serve_policy")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vabench.serve_policy", description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", nargs="?", help="a checkpoint of experiments/train_bc.py (docs/learn.md)")
    parser.add_argument("--demo", action="store_true", help="serve all-zero chunks")
    parser.add_argument("--script", help="serve this .npy of action vectors (steps, 7 x arms), then zeros")
    parser.add_argument(
        "--horizon", type=int, help=f"vectors per chunk (default {DEFAULT_HORIZON}; a checkpoint's: its own, 1)"
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default: loopback only)")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    if not (args.checkpoint or args.demo or args.script):
        parser.error("name a policy: --demo, --script FILE.npy or a CHECKPOINT")
    if args.horizon is not None and args.horizon < 1:
        parser.error("--horizon must be at least 1")
    try:
        server = PolicyServer(load(args), args.host, args.port)
    except OSError as e:
        raise CannotListen(
            f"cannot listen on {args.host}:{args.port}: {e.strerror or e}; pick another --port"
        ) from None
    print(f"serving {server.policy.metadata} on ws://{args.host}:{server.port} (Ctrl-C stops)", flush=True)
    try:
        server.server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
