"""The openpi websocket policy protocol, client side (docs/policy.md; interop notes 3).

The robot side is the client: it connects, receives the server's metadata (a msgpack map), then
per inference sends a msgpack map of numpy arrays and strings and receives one with the action
chunk. Arrays travel as openpi-client's ``msgpack_numpy`` writes them (``{"__ndarray__": True,
"data", "dtype", "shape"}``; numpy scalars as ``__npgeneric__``), so servers built on the published
``openpi-client`` package and :mod:`vabench.serve_policy` read the same frames. A text frame
instead of bytes is the server's error message.

Every failure is a :class:`ModelError`: a server that cannot be reached, closes or times out is
infrastructure (retried); a reply that is not the protocol's is permanent (retrying cannot help).
"""

from __future__ import annotations

import contextlib
import os
import socket
import time

import msgpack
import numpy as np
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, WebSocketException
from websockets.frames import CloseCode
from websockets.sync.client import ClientConnection, connect

from vabench.agents.chat.model import ModelError

# --- frames (the same bytes as openpi_client.msgpack_numpy) ------------------------------------


def _pack_array(obj):
    if isinstance(obj, np.ndarray | np.generic) and obj.dtype.kind in ("V", "O", "c"):
        raise ValueError(f"unsupported dtype {obj.dtype}")
    if isinstance(obj, np.ndarray):
        return {b"__ndarray__": True, b"data": obj.tobytes(), b"dtype": obj.dtype.str, b"shape": obj.shape}
    if isinstance(obj, np.generic):
        return {b"__npgeneric__": True, b"data": obj.item(), b"dtype": obj.dtype.str}
    return obj


def _unpack_array(obj):
    if b"__ndarray__" in obj:
        return np.ndarray(buffer=obj[b"data"], dtype=np.dtype(obj[b"dtype"]), shape=obj[b"shape"])
    if b"__npgeneric__" in obj:
        return np.dtype(obj[b"dtype"]).type(obj[b"data"])
    return obj


def pack(obj) -> bytes:
    return msgpack.packb(obj, default=_pack_array)


def unpack(data: bytes):
    return msgpack.unpackb(data, object_hook=_unpack_array)


# --- the connection ----------------------------------------------------------------------------


def headers(api_key_env: str | None) -> dict | None:
    """openpi's ``Authorization: Api-Key <key>`` when ``model.api_key_env`` names a set variable."""
    key = os.environ.get(api_key_env) if api_key_env else None
    return {"Authorization": f"Api-Key {key}"} if key else None


def why_unreachable(url: str, exc: BaseException) -> str:
    """One line for a failed connection (no traceback)."""
    causes, seen = [], exc
    while seen is not None and len(causes) < 8:
        causes.append(seen)
        seen = seen.__cause__ or seen.__context__
    for cause in causes:
        if isinstance(cause, ConnectionRefusedError):
            return f"model.extra.url={url}: connection refused (nothing listens there)"
        if isinstance(cause, InvalidStatus):
            status = cause.response.status_code
            if status in (401, 403):
                return f"model.extra.url={url}: the key was rejected (HTTP {status}); check model.api_key_env"
            return f"model.extra.url={url}: not a websocket policy server (HTTP {status} to the handshake)"
        if isinstance(cause, InvalidHandshake):
            return f"model.extra.url={url}: not a websocket policy server (its answer to the handshake: {cause})"
        if isinstance(cause, TimeoutError):
            return f"model.extra.url={url}: no answer within the timeout"
        if isinstance(cause, socket.gaierror):
            return f"model.extra.url={url}: unknown host"
    return f"model.extra.url={url}: cannot connect ({type(exc).__name__}: {str(exc)[:160]})"


class PolicyClient:
    """One websocket to a policy server: metadata on connect, then ``infer`` per chunk; a frame over
    ``max_frame_mb`` (MiB) is not read: the connection closes (1009) and the call fails as infra."""

    def __init__(self, url: str, timeout_s: float, api_key_env: str | None, max_frame_mb: float):
        self.url, self.timeout_s, self.max_frame_mb = url, timeout_s, max_frame_mb
        self.stack = contextlib.ExitStack()  # the connection's context, closed by close()
        try:
            self.ws: ClientConnection = self.stack.enter_context(
                connect(
                    url,
                    compression=None,
                    max_size=int(max_frame_mb * 2**20),  # a bigger frame closes the connection (1009)
                    open_timeout=timeout_s,
                    additional_headers=headers(api_key_env),
                )
            )
            first = self.ws.recv(timeout=timeout_s)
        except (OSError, TimeoutError, WebSocketException) as e:
            raise ModelError(f"policy server: {why_unreachable(url, e)}") from None
        self.metadata = self._decode(first, "its metadata")
        if not isinstance(self.metadata, dict):
            self.close()
            raise ModelError(f"policy server {url}: its first frame is not a metadata map", permanent=True)

    def infer(self, obs: dict) -> tuple[dict, float]:
        """The server's reply to ``obs`` and the round trip in seconds."""
        started = time.perf_counter()
        try:
            self.ws.send(pack(obs))
            frame = self.ws.recv(timeout=self.timeout_s)
        except TimeoutError:
            raise ModelError(
                f"policy server {self.url}: no reply within {self.timeout_s:g} s (model.timeout_s)"
            ) from None
        except ConnectionClosed as e:
            if e.sent is not None and e.sent.code == CloseCode.MESSAGE_TOO_BIG:
                raise ModelError(
                    f"policy server {self.url}: its reply is over model.extra.max_frame_mb={self.max_frame_mb:g} "
                    f"(MiB); the connection was closed"
                ) from None
            raise ModelError(f"policy server {self.url}: the connection closed ({e})") from None
        except (OSError, WebSocketException) as e:
            raise ModelError(f"policy server {self.url}: {type(e).__name__}: {e}") from None
        reply = self._decode(frame, "its reply")
        if not isinstance(reply, dict):
            raise ModelError(f"policy server {self.url}: its reply is not a map", permanent=True)
        return reply, time.perf_counter() - started

    def _decode(self, frame, what: str):
        if isinstance(frame, str):  # openpi servers send their traceback as text, then close
            last = frame.strip().splitlines()[-1][:300] if frame.strip() else "(empty)"
            raise ModelError(f"policy server {self.url} failed: {last}")
        try:
            return unpack(frame)
        except Exception as e:  # not msgpack: the server speaks another protocol
            raise ModelError(f"policy server {self.url}: {what} is not msgpack ({type(e).__name__})", True) from None

    def close(self) -> None:
        try:
            self.stack.close()
        except Exception:  # closing a broken connection must never fail an episode
            pass
