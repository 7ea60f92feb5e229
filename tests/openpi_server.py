"""A policy server written the way openpi's ``WebsocketPolicyServer`` is, on the published
``openpi-client`` package's own serialisation (``openpi_client.msgpack_numpy``), not on vabench's
codec: metadata on connect, one packed map per inference with ``server_timing``, the traceback as
a text frame when the policy raises. It keeps every observation it received, and each
connection's observations apart (``sessions``: a server that keeps state per connection), for the
tests; ``close_after`` replies it closes a connection itself (a server that goes away mid-episode)."""

from __future__ import annotations

import threading
import time
import traceback

import websockets.exceptions
import websockets.frames
from openpi_client import base_policy, msgpack_numpy
from websockets.sync.server import serve


class OpenpiServer:
    def __init__(self, policy: base_policy.BasePolicy, metadata: dict | None = None, close_after: int | None = None):
        self.policy, self.metadata, self.close_after = policy, metadata or {}, close_after
        self.received: list[dict] = []
        self.sessions: list[list[dict]] = []  # per connection, in the order they connected
        self.most_open = 0  # the most connections open at once
        self.connections = 0
        self.dropped = 0  # connections that ended without a close frame (the client vanished)
        self._ended = threading.Condition()
        self._open = 0
        self.server = serve(self._handler, "127.0.0.1", 0, compression=None, max_size=None)
        self.port = self.server.socket.getsockname()[1]
        self.url = f"ws://127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def _handler(self, websocket) -> None:
        session: list[dict] = []
        with self._ended:
            self.connections += 1
            self._open += 1
            self.most_open = max(self.most_open, self._open)
            self.sessions.append(session)
        try:
            self._serve(websocket, session)
        except websockets.exceptions.ConnectionClosedError:
            self.dropped += 1
        except websockets.exceptions.ConnectionClosedOK:  # the client closed while the policy was answering
            pass
        finally:
            with self._ended:
                self._open -= 1
                self._ended.notify_all()

    def wait_closed(self, timeout: float = 30.0) -> bool:
        """True once every connection has ended (its handler returned), within ``timeout``."""
        with self._ended:
            return self._ended.wait_for(lambda: self._open == 0, timeout)

    def _serve(self, websocket, session: list[dict]) -> None:
        packer = msgpack_numpy.Packer()
        websocket.send(packer.pack(self.metadata))
        self.policy.reset()
        for message in websocket:
            if self.close_after is not None and len(session) >= self.close_after:
                websocket.close()
                return
            try:
                start = time.monotonic()
                obs = msgpack_numpy.unpackb(message)
                self.received.append(obs)
                session.append(obs)
                action = self.policy.infer(obs)
                action["server_timing"] = {"infer_ms": (time.monotonic() - start) * 1000}
                websocket.send(packer.pack(action))
            except Exception:
                websocket.send(traceback.format_exc())
                websocket.close(
                    code=websockets.frames.CloseCode.INTERNAL_ERROR,
                    reason="Internal server error. Traceback included in previous frame.",
                )
                return

    def shutdown(self) -> None:
        self.server.shutdown()


class Scripted(base_policy.BasePolicy):
    """A fixed sequence of action vectors, ``horizon`` per chunk, then zeros (restarts on reset)."""

    def __init__(self, vectors, horizon: int = 4):
        import numpy as np

        self.vectors, self.horizon, self.cursor, self.np = np.asarray(vectors, dtype=np.float32), horizon, 0, np

    def reset(self) -> None:
        self.cursor = 0

    def infer(self, obs: dict) -> dict:
        chunk = self.vectors[self.cursor : self.cursor + self.horizon]
        self.cursor += len(chunk)
        pad = self.np.zeros((self.horizon - len(chunk), self.vectors.shape[1]), dtype=self.np.float32)
        return {"actions": self.np.concatenate([chunk, pad])}
