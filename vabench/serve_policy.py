"""A small policy server speaking the openpi websocket protocol (docs/policy.md), for ``model=policy``.

    python -m vabench.serve_policy --demo                      # all-zero chunks: the agent holds still
    python -m vabench.serve_policy --script vectors.npy        # a fixed sequence of action vectors, then zeros
    python -m vabench.serve_policy --demo --port 8001 --host 0.0.0.0
    python -m vabench.serve_policy bc.pt                       # a checkpoint of experiments/train_bc.py (docs/learn.md)

    python -m vabench.serve_policy bc.pt --batch-window-ms 10  # batch observations arriving within 10 ms

Any :class:`Policy` plugs in: ``infer(obs) -> {"actions": (horizon, 7 x arms)}`` and ``metadata``
(``infer_batch`` where it batches); :class:`PolicyServer` does the protocol (metadata on connect,
one msgpack-numpy map per inference, ``server_timing`` added with the batch's size, the traceback as
a text frame when the policy raises, ``/healthz``, ``/stats``: the batches served by size). The
observations of all clients that arrive within the batching window go to the policy in one call. A
checkpoint is loaded by :func:`load` (vabench.learn.policy, the ``learn`` extra: torch, imported
only then); another kind of trained policy is one more ``Policy`` and a branch there.
The server binds the loopback interface unless ``--host`` says otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import http
import importlib.util
import json
import queue
import sys
import threading
import time
import traceback
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode
from websockets.sync.server import Server, ServerConnection, serve

from vabench.agents.models.policy_actions import PER_ARM
from vabench.agents.models.policy_wire import pack, unpack
from vabench.core.errors import CannotListen, NotFound, VabenchError, command
from vabench.envs.state import FIELDS

STATE_KEY = "observation/state"  # the agent's default model.extra.state_key
BATCH_WINDOW_MS = 5.0  # --batch-window-ms: how long the first observation waiting waits for others
MAX_BATCH = 32  # --max-batch: the most observations in one infer_batch call


class Policy(ABC):
    """What the server serves. ``infer`` gets the client's map (images, state, prompt) and returns a
    map holding ``actions``; ``infer_batch`` answers several clients' maps in one call (one forward
    pass where the policy can batch; the default asks ``infer`` once each); ``reset`` is called when
    a client connects (a new session)."""

    metadata: dict = {}

    @abstractmethod
    def infer(self, obs: dict) -> dict: ...

    def infer_batch(self, batch: list[dict]) -> list[dict]:
        """One answer per observation, in order."""
        return [self.infer(obs) for obs in batch]

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


class PolicyFailed(VabenchError, RuntimeError):
    """The policy raised on a batch; the message is its traceback (sent to each client of the batch)."""


@dataclass
class _Ask:
    """One client's observation waiting for its batch's answer."""

    obs: dict
    done: threading.Event = field(default_factory=threading.Event)
    out: dict | None = None
    failed: str | None = None  # the policy's traceback
    batch: int = 0  # the size of the batch it went in


class Batcher:
    """One thread asks the policy: the observations that arrive within ``window_s`` of the first one
    waiting go together in one ``infer_batch`` call (at most ``max_batch``); the window closes early
    once every open session has an observation waiting (``open``), so a lone client never waits
    for it. ``sizes``: how many batches of each size were served (``GET /stats``)."""

    def __init__(self, policy: Policy, lock: threading.Lock, window_s: float, max_batch: int):
        self.policy, self.lock, self.window_s, self.max_batch = policy, lock, window_s, max_batch
        self.waiting: queue.SimpleQueue[_Ask] = queue.SimpleQueue()
        self.sizes: Counter[int] = Counter()
        self.open = 0  # sessions connected now (PolicyServer counts them)
        threading.Thread(target=self._loop, name="policy-batcher", daemon=True).start()

    def infer(self, obs: dict) -> tuple[dict, int]:
        """The policy's answer to ``obs`` and the size of the batch it went in; PolicyFailed."""
        ask = _Ask(obs)
        self.waiting.put(ask)
        ask.done.wait()
        if ask.failed is not None:
            raise PolicyFailed(ask.failed)
        return ask.out, ask.batch

    def _gather(self) -> list[_Ask]:
        batch = [self.waiting.get()]
        closes = time.monotonic() + self.window_s
        while len(batch) < min(self.max_batch, max(1, self.open)):
            try:
                batch.append(self.waiting.get(timeout=max(0.0, closes - time.monotonic())))
            except queue.Empty:
                break
        return batch

    def _loop(self) -> None:
        while True:
            batch = self._gather()
            outs, failures = self._answer(batch)
            self.sizes[len(batch)] += 1
            for ask, out, failed in zip(batch, outs, failures, strict=True):
                if failed is None and not isinstance(out, Mapping):
                    out, failed = None, f"the policy answered a {type(out).__name__}, not a map"
                ask.out, ask.failed, ask.batch = (dict(out) if out is not None else None), failed, len(batch)
                ask.done.set()

    def _answer(self, batch: list) -> tuple[list, list]:
        """Each observation's answer and failure (a traceback, as from infer): the batch in one pass;
        if that fails, each observation alone, so one bad observation fails only its own client."""
        try:
            with self.lock:
                outs = list(self.policy.infer_batch([a.obs for a in batch]))
            if len(outs) == len(batch):
                return outs, [None] * len(batch)
            why = f"infer_batch answered {len(outs)} of {len(batch)}"
        except Exception:
            why = traceback.format_exc()
        if len(batch) == 1:
            return [None], [why]
        alone = [self._answer([ask]) for ask in batch]
        return [o[0] for o, _ in alone], [f[0] for _, f in alone]


class PolicyServer:
    """Serves one policy to any number of clients (one thread each); their observations are
    batched by a :class:`Batcher` (``batch_window_ms``, ``max_batch``)."""

    def __init__(
        self,
        policy: Policy,
        host: str = "127.0.0.1",
        port: int = 8000,
        batch_window_ms: float = BATCH_WINDOW_MS,
        max_batch: int = MAX_BATCH,
    ):
        self.policy, self.lock = policy, threading.Lock()
        self.batcher = Batcher(policy, self.lock, batch_window_ms / 1000.0, max_batch)
        self.server: Server = serve(
            self._session, host, port, compression=None, max_size=None, process_request=self._http
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

    def stats(self) -> dict:
        """Batches served by size, and the inferences in them (``GET /stats`` as JSON)."""
        sizes = dict(sorted(self.batcher.sizes.items()))
        return {"batches": {str(k): v for k, v in sizes.items()}, "inferences": sum(k * v for k, v in sizes.items())}

    def _http(self, connection: ServerConnection, request):
        if request.path == "/healthz":
            return connection.respond(http.HTTPStatus.OK, "OK\n")
        if request.path == "/stats":
            return connection.respond(http.HTTPStatus.OK, json.dumps(self.stats()) + "\n")
        return None

    def _session(self, ws: ServerConnection) -> None:
        with self.lock:  # counted before the metadata goes: a client may send as soon as it has it
            self.policy.reset()
            self.batcher.open += 1
        try:
            ws.send(pack(self.policy.metadata))
            with contextlib.suppress(ConnectionClosed):  # a client that leaves without closing ends its session
                self._serve(ws)
        finally:
            with self.lock:
                self.batcher.open -= 1

    def _serve(self, ws: ServerConnection) -> None:
        for frame in ws:
            started = time.monotonic()
            try:
                out, size = self.batcher.infer(unpack(frame))
            except Exception as e:  # the protocol's way: the traceback as text, then close
                ws.send(str(e) if isinstance(e, PolicyFailed) else traceback.format_exc())
                ws.close(CloseCode.INTERNAL_ERROR, "Internal server error. Traceback included in previous frame.")
                return
            out["server_timing"] = {"infer_ms": (time.monotonic() - started) * 1000, "batch_size": size}
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
    parser.add_argument(
        "--batch-window-ms",
        type=float,
        default=BATCH_WINDOW_MS,
        help=f"observations arriving within this window go to the policy as one batch (default {BATCH_WINDOW_MS:g})",
    )
    parser.add_argument("--max-batch", type=int, default=MAX_BATCH, help=f"at most this many (default {MAX_BATCH})")
    args = parser.parse_args(argv)
    if not (args.checkpoint or args.demo or args.script):
        parser.error("name a policy: --demo, --script FILE.npy or a CHECKPOINT")
    if args.horizon is not None and args.horizon < 1:
        parser.error("--horizon must be at least 1")
    if args.batch_window_ms < 0 or args.max_batch < 1:
        parser.error("--batch-window-ms must be at least 0 and --max-batch at least 1")
    try:
        server = PolicyServer(load(args), args.host, args.port, args.batch_window_ms, args.max_batch)
    except OSError as e:
        raise CannotListen(
            f"cannot listen on {args.host}:{args.port}: {e.strerror or e}; pick another --port"
        ) from None
    window = f"batches within {args.batch_window_ms:g} ms, at most {args.max_batch}"
    print(f"serving {server.policy.metadata} on ws://{args.host}:{server.port} ({window}; Ctrl-C stops)", flush=True)
    try:
        server.server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
