"""A real OpenAI-compatible HTTP server for tests: the model client is exercised over HTTP
(LiteLLM, the OpenAI SDK, httpx), not through mocks, so a test sees what a provider would do.
The same server also speaks Anthropic's native Messages API (``POST /v1/messages``: point
``api_base`` at :attr:`ScriptedServer.base`) and Gemini's ``generateContent``, with the same
scripted replies in each provider's own format.

Replies are scripted in order. Each queued reply is one of:

- ``str``: assistant content, 200 OK;
- ``{"content": str, "usage": {"prompt_tokens": n, "completion_tokens": m}}``: 200 with that usage
  (optional ``"model"``: the model name to report instead of echoing the request's; optional
  ``"thinking"``: reasoning text, sent as Anthropic's ``thinking`` block or Gemini's thought part;
  the usage dict is the provider's own: OpenAI's, Anthropic's ``input_tokens``/``output_tokens``/...,
  or Gemini's ``usageMetadata``);
- ``{"status": 429, "body": "...", "headers": {...}}``: an error with an OpenAI-style JSON error body;
- ``{"delay": seconds, "then": reply}``: a slow provider (sleeps, then answers ``then``);
- ``{"no_choices": True}``: a 200 whose ``choices`` list is empty;
- ``{"raw": str}``: a 200 whose body is that text as it is (a malformed reply);
- a callable ``f(request_body) -> reply``: a reply computed from the request (:class:`Faults` and
  :class:`RateLimit` are two).

A reply without a usage (or whose usage leaves a count out) reports the tokens the provider would
bill, counted as it counts them (:func:`counted_usage`: the model's tokenizer through
``litellm.token_counter``, images by the provider's rule), never by vabench's own estimate.

When the queue is empty the ``default`` reply is used; ``None`` answers 500 "script ran out" so a
test that sends more requests than it scripted fails loudly.
"""

from __future__ import annotations

import bisect
import json
import math
import random
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
}


class ScriptedServer:
    """Context manager: starts on enter, stops on exit. ``url`` ends in ``/v1``.

    ``keep_bodies=False`` (long benchmarks): ``requests``, ``raw_bodies``, ``headers`` and
    ``responses`` stay empty, whose images would fill memory; ``times`` and ``statuses`` are kept.
    ``clock``: what ``times`` are read from (a test's fake clock, shared with the client)."""

    def __init__(
        self,
        default: Any = None,
        host: str = "127.0.0.1",
        port: int = 0,
        keep_bodies: bool = True,
        clock: Callable[[], float] = time.perf_counter,
    ):
        self.default = default
        self.keep_bodies, self.clock = keep_bodies, clock
        self.requests: list[dict] = []  # parsed JSON bodies of /v1/chat/completions, in arrival order
        self.raw_bodies: list[bytes] = []
        self.headers: list[dict[str, str]] = []  # request headers (lower-cased names), same order
        self.times: list[float] = []  # clock() at each request's arrival
        self.paths: list[str] = []  # the request path of each recorded request, same order
        self.responses: list[tuple[int, dict]] = []  # (status, JSON body) sent for each chat request
        self.statuses: list[int] = []  # the status sent for each chat request, in the order they were sent
        self._queue: deque = deque()
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer((host, port), _make_handler(self))
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None
        h, p = self._httpd.server_address[:2]
        self.base = f"http://{h}:{p}"  # api_base for Anthropic (LiteLLM appends /v1/messages) and Gemini
        self.url = f"{self.base}/v1"

    # -- scripting ---------------------------------------------------------------------------
    def script(self, *replies: Any) -> None:
        with self._lock:
            self._queue.extend(replies)

    def reset(self) -> None:
        with self._lock:
            self._queue.clear()
            self.requests.clear()
            self.raw_bodies.clear()
            self.headers.clear()
            self.paths.clear()
            self.times.clear()
            self.responses.clear()
            self.statuses.clear()

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> ScriptedServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.02,), name="scripted-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- request handling (called from handler threads) --------------------------------------
    def _record(self, raw: bytes, headers: dict[str, str], path: str = "") -> tuple[dict, Any]:
        try:
            body = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            body = {"_unparsed": raw.decode("utf-8", "replace")}
        with self._lock:
            self.times.append(self.clock())
            if self.keep_bodies:
                self.raw_bodies.append(raw)
                self.requests.append(body)
                self.headers.append(headers)
                self.paths.append(path)
            reply = self._queue.popleft() if self._queue else self.default
        return body, reply

    def _sent(self, status: int, payload: dict) -> None:
        with self._lock:
            self.statuses.append(status)
            if self.keep_bodies:
                self.responses.append((status, payload))


def counted_usage(body: dict, wire: str, content: str | None) -> tuple[int, int]:
    """The request's prompt tokens and the reply's, as the provider would count them
    (:mod:`vabench.agents.chat.tokens`: the model's tokenizer, images by the provider's rule)."""
    from vabench.agents.chat.tokens import request_tokens, text_tokens

    model = f"{wire}/{body.get('model') or 'model'}"
    return request_tokens(model, chat_messages(body, wire)).total, text_tokens(model, content or "")


def chat_messages(body: dict, wire: str) -> list[dict]:
    """A request body's messages in chat form (Anthropic's system prompt and Gemini's contents made
    messages; images as Anthropic's image blocks), for :func:`counted_usage`."""
    if wire == "openai":
        return list(body.get("messages") or [])
    if wire == "anthropic":
        system = body.get("system")
        return ([{"role": "system", "content": system}] if system else []) + list(body.get("messages") or [])
    system = body.get("systemInstruction") or body.get("system_instruction")
    out = []
    for content in ([{**system, "role": "system"}] if system else []) + list(body.get("contents") or []):
        parts = []
        for part in content.get("parts") or []:
            data = part.get("inline_data") or part.get("inlineData")
            if "text" in part:
                parts.append({"type": "text", "text": part["text"]})
            elif data:
                parts.append({"type": "image", "source": {"data": data.get("data", "")}})
        out.append({"role": content.get("role") or "user", "content": parts})
    return out


def _completion(
    model: str, content: str | None, usage: dict | None, no_choices: bool = False, counted: tuple = (0, 0)
) -> dict:
    u = {"prompt_tokens": counted[0], "completion_tokens": counted[1], **(usage or {})}
    u["total_tokens"] = u["prompt_tokens"] + u["completion_tokens"]
    choices = (
        []
        if no_choices
        else [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]
    )
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": choices,
        "usage": u,
    }


def _anthropic(model: str, content: str, usage: dict | None, thinking: str | None, counted: tuple = (0, 0)) -> dict:
    blocks = [{"type": "thinking", "thinking": thinking, "signature": "sig-test"}] if thinking else []
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [*blocks, {"type": "text", "text": content}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": counted[0], "output_tokens": counted[1], **(usage or {})},
    }


def _gemini(model: str, content: str, usage: dict | None, thinking: str | None, counted: tuple = (0, 0)) -> dict:
    parts = [{"text": thinking, "thought": True}] if thinking else []
    meta = {"promptTokenCount": counted[0], "candidatesTokenCount": counted[1], **(usage or {})}
    meta["totalTokenCount"] = sum(v for k, v in meta.items() if k.endswith("TokenCount"))
    return {
        "candidates": [{"content": {"parts": [*parts, {"text": content}], "role": "model"}, "finishReason": "STOP"}],
        "usageMetadata": meta,
        "modelVersion": model,
    }


def _error_body(status: int, message: str) -> dict:
    return {
        "error": {"message": message, "type": _ERROR_TYPES.get(status, "server_error"), "param": None, "code": None}
    }


def _make_handler(server: ScriptedServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        disable_nagle_algorithm = True  # else headers and body leave in two packets and delayed ACKs add ~40 ms
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (stdlib signature)
            pass  # silence per-request logging

        def _send_json(self, status: int, payload: dict, headers: dict | None = None, record: bool = False) -> None:
            if record:
                server._sent(status, payload)
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, str(v))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout): nothing to answer

        def _send_raw(self, data: bytes) -> None:
            server._sent(200, {"_raw": data.decode(errors="replace")})
            try:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def do_GET(self) -> None:  # noqa: N802 (stdlib name)
            if self.path.rstrip("/").endswith("/v1/models"):
                self._send_json(200, {"object": "list", "data": [{"id": "test-model", "object": "model"}]})
            else:
                self._send_json(404, _error_body(404, f"no route {self.path}"))

        def do_POST(self) -> None:  # noqa: N802 (stdlib name)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            path = self.path.split("?", 1)[0].rstrip("/")
            if path.endswith("/chat/completions"):
                wire = "openai"
            elif path.endswith("/v1/messages"):
                wire = "anthropic"
            elif path.endswith(":generateContent"):
                wire = "gemini"
            else:
                self._send_json(404, _error_body(404, f"no route {self.path}"))
                return
            headers = {k.lower(): v for k, v in self.headers.items()}
            body, reply = server._record(raw, headers, path)
            if wire == "gemini":
                body.setdefault("model", path.rsplit("/", 1)[-1].split(":", 1)[0])
            self._answer(body, reply, wire)

        def _answer(self, body: dict, reply: Any, wire: str = "openai") -> None:
            model = str(body.get("model", "unknown"))
            while True:
                if callable(reply):
                    reply = reply(body)
                elif isinstance(reply, dict) and "delay" in reply:
                    time.sleep(float(reply["delay"]))
                    reply = reply.get("then", "")
                else:
                    break
            headers = None
            text = reply if isinstance(reply, str) else reply.get("content") if isinstance(reply, dict) else None
            answers = isinstance(reply, str) or (isinstance(reply, dict) and not {"status", "raw"} & reply.keys())
            counted = counted_usage(body, wire, text) if answers else (0, 0)
            if reply is None:
                status, payload = 500, _error_body(500, "ScriptedServer: the script ran out of replies")
            elif isinstance(reply, str) and wire != "openai":
                build = _anthropic if wire == "anthropic" else _gemini
                status, payload = 200, build(model, reply, None, None, counted)
            elif isinstance(reply, str):
                status, payload = 200, _completion(model, reply, None, counted=counted)
            elif isinstance(reply, dict) and "status" in reply:
                status = int(reply["status"])
                payload = _error_body(status, reply.get("body") or f"scripted error {status}")
                headers = reply.get("headers")
            elif isinstance(reply, dict) and "raw" in reply:
                self._send_raw(reply["raw"].encode())
                return
            elif isinstance(reply, dict) and reply.get("no_choices"):
                status, payload = 200, _completion(model, None, reply.get("usage"), True, counted)
            elif isinstance(reply, dict) and "content" in reply and wire != "openai":
                build = _anthropic if wire == "anthropic" else _gemini
                status, payload = (
                    200,
                    build(
                        reply.get("model", model), reply["content"], reply.get("usage"), reply.get("thinking"), counted
                    ),
                )
            elif isinstance(reply, dict) and "content" in reply:
                status, payload = (
                    200,
                    _completion(reply.get("model", model), reply["content"], reply.get("usage"), counted=counted),
                )
            else:
                status, payload = 500, _error_body(500, f"ScriptedServer: bad scripted reply {reply!r}")
            self._send_json(status, payload, headers, record=True)

    return Handler


class Faults:
    """A flaky provider: each request fails with probability ``rate``, as one of a 500, a 429 with
    ``Retry-After``, a reply slower than the client's timeout, or a malformed 200 body; otherwise
    ``reply(body)`` answers. ``log`` holds each request's fate ("ok" or the fault), in arrival order."""

    KINDS = ("500", "429", "timeout", "malformed")

    def __init__(self, reply, rate: float = 0.3, seed: int = 0, retry_after_s: float = 0.2, slow_s: float = 2.0):
        self.reply, self.rate, self.retry_after_s, self.slow_s = reply, rate, retry_after_s, slow_s
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self.log: list[str] = []

    def __call__(self, body: dict):
        with self._lock:
            fate = self._rng.choice(self.KINDS) if self._rng.random() < self.rate else "ok"
            self.log.append(fate)
        if fate == "500":
            return {"status": 500, "body": "injected server error"}
        if fate == "429":
            return {"status": 429, "body": "injected rate limit", "headers": {"Retry-After": str(self.retry_after_s)}}
        if fate == "timeout":
            return {"delay": self.slow_s, "then": self.reply(body)}
        if fate == "malformed":
            return {"raw": '{"id": "chatcmpl-broken", "choices": [{"index": 0, "message": '}
        return self.reply(body)


class RateLimit:
    """A provider's own sliding-window limit: when ``rpm`` requests were already accepted within the
    last ``window_s`` seconds, a request gets a 429 whose ``Retry-After`` is the time until the oldest
    of them leaves the window (rounded up to 0.1 s); otherwise it is accepted and ``reply(body)``
    answers (a callable, or a fixed reply). ``accepted`` and ``rejected`` log ``time.monotonic()``."""

    def __init__(self, reply, rpm: int, window_s: float = 60.0):
        self.reply, self.rpm, self.window_s = reply, rpm, window_s
        self._lock = threading.Lock()
        self.accepted: list[float] = []
        self.rejected: list[float] = []

    def __call__(self, body: dict):
        with self._lock:
            now = time.monotonic()
            recent = [t for t in self.accepted[-self.rpm :] if t > now - self.window_s]
            if len(recent) >= self.rpm:
                self.rejected.append(now)
                retry_after = math.ceil((recent[0] + self.window_s - now) * 10) / 10
                return {"status": 429, "body": "rate limit reached", "headers": {"Retry-After": f"{retry_after:.1f}"}}
            self.accepted.append(now)
        return self.reply(body) if callable(self.reply) else self.reply

    def most_within(self, window_s: float | None = None) -> int:
        """The most requests (accepted or refused) that arrived within any ``window_s`` (default: the
        limit's window), as this provider counts a window: (t - window_s, t]."""
        window_s = self.window_s if window_s is None else window_s
        with self._lock:
            times = sorted(self.accepted + self.rejected)
        return max((i - bisect.bisect_right(times, t - window_s) + 1 for i, t in enumerate(times)), default=0)
