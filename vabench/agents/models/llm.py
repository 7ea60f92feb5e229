"""The LiteLLM client: one :class:`Model` for every hosted or local provider LiteLLM speaks
(OpenAI, Anthropic, Gemini, Qwen/DashScope, vLLM, Ollama, ...).

Providers fail in ways that say nothing about the model's skill (rate limits, timeouts, 5xx);
those are retried here with exponential backoff and jitter, and when retries run out the call
raises :class:`ModelError`, which the harness turns into an ``infra_error`` episode, never a task
failure. LiteLLM itself is imported on first use (about 3 s), never by the simulator side.
"""

from __future__ import annotations

import email.utils
import functools
import logging
import os
import re
import threading
import time
from typing import Any

import tenacity

from vabench.agents.chat.model import Model, ModelConfig, ModelError, Reply, Usage
from vabench.agents.chat.prefix import Prices, anthropic, cache_breakpoints, cache_tokens
from vabench.agents.chat.tokens import estimate_messages
from vabench.core.errors import ConfigError, CostCapReached, RunStopped
from vabench.core.vocab import CostLimit

from .ratelimit import RateLimiter

log = logging.getLogger(__name__)


# ``ModelConfig.extra`` keys that would override what the client sets itself, and what to use instead.
_RESERVED_EXTRA: dict[str, str] = {
    "model": "model.id",
    "messages": "the messages argument of complete()",
    "api_key": "ModelConfig.api_key_env (the name of an environment variable; keys never live in configs)",
    "api_base": "model.api_base",
    "base_url": "model.api_base",
    "timeout": "ModelConfig.timeout_s",
    "request_timeout": "ModelConfig.timeout_s",
    "num_retries": "ModelConfig.max_retries (the client retries itself)",
    "max_retries": "ModelConfig.max_retries (the client retries itself)",
    "max_tokens": "ModelConfig.max_tokens",
    "temperature": "ModelConfig.temperature",
    "stream": "nothing: the harness needs whole replies, streaming is not supported",
    "drop_params": "nothing: it is always True",
}

_SECRETISH = re.compile(r"(?i)\b(sk|pk|rk|api[-_]?key)[-_][A-Za-z0-9_\-*.]{6,}|\bBearer\s+\S+")
_SHORT = 300  # characters of a provider's error text kept in a ModelError
# A request is booked on the tpm schedule as its prompt estimate plus ``max_tokens``: providers (OpenAI
# among them) count ``max_tokens`` against the limit when they accept a request, and settle() gives back
# what the reply did not use as soon as it arrives, so only requests in flight are over-booked.
_LAZY = threading.Lock()  # one process-local limiter per model, however many threads start at once


@functools.cache
def _litellm() -> Any:
    """Import LiteLLM on first use: the offline agents and the simulator side never pay its ~3 s
    import. The local cost map pins prices to the installed version and keeps import off the network."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True  # else every exception prints a "Give Feedback" banner to stdout
    # e.g. "Dropping reasoning_effort ... for gpt-4o" on every call: the template's setting is meant for
    # reasoning models only (conf/model/openai.yaml), and errors reach the record as ModelError anyway
    # LiteLLM's, the OpenAI SDK's and httpx's INFO lines (one per request and retry) reach the launcher's
    # console through Hydra's root handler: quiet unless asked for with LiteLLM's own LITELLM_LOG=INFO|DEBUG
    if not os.environ.get("LITELLM_LOG"):
        for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "openai", "httpx", "httpcore"):
            logging.getLogger(name).setLevel(logging.ERROR if name.startswith("LiteLLM") else logging.WARNING)
    litellm.turn_off_message_logging = True  # no copy of each request's images for logging we never read (~2 ms/call)
    return litellm


def _retryable_types(litellm: Any) -> tuple[type[BaseException], ...]:
    names = (
        "RateLimitError",
        "Timeout",
        "APIConnectionError",
        "InternalServerError",
        "ServiceUnavailableError",
        "BadGatewayError",
    )
    return tuple(getattr(litellm, n) for n in names if hasattr(litellm, n))


def _is_client_config_error(exc: BaseException) -> bool:
    """True when LiteLLM wrapped a client-side setup error (e.g. "Missing credentials" from the
    OpenAI SDK) as an InternalServerError: no request was sent, so retrying cannot help."""
    import openai

    seen: BaseException | None = exc
    for _ in range(10):
        if seen is None:
            return False
        if type(seen) is openai.OpenAIError:  # the SDK's bare base class: raised before any HTTP
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _is_retryable(exc: BaseException) -> bool:
    litellm = _litellm()
    if _is_client_config_error(exc):
        return False
    if isinstance(exc, _retryable_types(litellm)):
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(exc, litellm.APIError) and isinstance(status, int) and status >= 500


def _is_rate_limited(exc: BaseException) -> bool:
    return isinstance(exc, _litellm().RateLimitError) or getattr(exc, "status_code", None) == 429


def _retry_after_s(exc: BaseException | None) -> float | None:
    """Seconds the provider asked us to wait (``retry-after-ms`` or ``Retry-After``, seconds or an HTTP date)."""
    if exc is None:
        return None
    headers = getattr(exc, "litellm_response_headers", None)
    if headers is None:
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None)
    if not headers:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000.0)
        value = headers.get("retry-after")
        if value is None:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            when = email.utils.parsedate_to_datetime(value)
            return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError, AttributeError):
        return None


def _reasoning_tokens(usage: Any) -> int:
    """Reasoning / thinking tokens of a reply (OpenAI ``completion_tokens_details``, which LiteLLM also
    fills for Anthropic and Gemini); they are part of ``completion_tokens`` and priced with them."""
    details = getattr(usage, "completion_tokens_details", None)
    return int(getattr(details, "reasoning_tokens", 0) or 0)


def prices(model_id: str) -> Prices | None:
    """The model's prices from LiteLLM's map, or None when it does not know the model (a local
    model, a typo); a missing cached rate is the full input rate."""
    try:
        info = _litellm().get_model_info(model_id)
    except Exception:  # not mapped: unknown, never fatal
        return None
    inp, out = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    if inp is None or out is None:
        return None
    read = info.get("cache_read_input_token_cost")
    write = info.get("cache_creation_input_token_cost")
    reasoning = info.get("output_cost_per_reasoning_token")
    return Prices(inp, inp if read is None else read, inp if write is None else write, out, reasoning or out)


class _Backoff:
    """Exponential backoff with full jitter; a provider's Retry-After raises the wait (up to ``cap``)."""

    def __init__(self, initial_s: float, cap_s: float):
        self._jitter = tenacity.wait_random_exponential(multiplier=initial_s, max=cap_s)
        self._cap = cap_s

    def __call__(self, state: tenacity.RetryCallState) -> float:
        wait = self._jitter(state)
        exc = state.outcome.exception() if state.outcome is not None else None
        asked = _retry_after_s(exc)
        if asked is not None:
            wait = max(wait, min(asked, self._cap))
        return wait


class LiteLLMModel(Model):
    """Any provider LiteLLM speaks, called synchronously with our own retries.

    Both of LiteLLM's retry layers are switched off per call (``num_retries=0`` and the OpenAI
    SDK's ``max_retries=0``; in 1.110.2 a per-call ``num_retries`` also sets the SDK's, and with
    neither the SDK retries twice): they would multiply ours, and LiteLLM's global
    ``num_retries`` resets itself after the first exception. Retries here use tenacity with
    exponential backoff and full jitter, on rate limits, timeouts, connection errors and 5xx only.

    ``Reply.latency_s`` is the duration of the successful HTTP attempt (backoff and failed
    attempts excluded), so it measures the model, not the provider's bad minutes.

    Rate limits (``ModelConfig.rpm``/``tpm``): every HTTP attempt first takes a slot from
    ``self.limiter`` (the run's, set by the worker; else a process-local one) and sleeps until it
    (``Reply.limit_wait_s``, never in ``backoff_s`` or ``latency_s``); a 429 with Retry-After
    pauses the limiter, so every caller of the run waits, not only the one that was refused.
    """

    clock, sleep = staticmethod(time.perf_counter), staticmethod(time.sleep)  # a test's fake clock goes here

    def __init__(self, cfg: ModelConfig):
        for key in cfg.extra:
            if key in _RESERVED_EXTRA:
                raise ConfigError(f"ModelConfig.extra must not set {key!r}: use {_RESERVED_EXTRA[key]}")
        if cfg.max_cost_usd is not None and prices(cfg.id) is None:
            raise ConfigError(
                f"model.max_cost_usd is set, but LiteLLM's price map does not know {cfg.id}: its spend cannot be "
                "counted; remove model.max_cost_usd, or name a priced model"
            )
        self.cfg = cfg
        self.name = cfg.name or cfg.id
        self._breakpoints = cfg.prompt_cache and anthropic(cfg.id)

    def warm(self) -> None:
        """Import LiteLLM (~4 s) and run its first-call set-up (~0.4 s) on a mocked reply: no
        request leaves the machine, and the first timed episode does not pay either."""
        _litellm().completion(model=self.cfg.id, messages=[{"role": "user", "content": "warm-up"}], mock_response="ok")

    # -- helpers --------------------------------------------------------------------------------
    def _api_key(self) -> str | None:
        var = self.cfg.api_key_env
        if not var:
            return None  # LiteLLM falls back to the provider's own variable (OPENAI_API_KEY, ...)
        key = os.environ.get(var)
        if not key:
            raise ModelError(
                f"{self.name}: environment variable {var} (ModelConfig.api_key_env) is not set", permanent=True
            )
        return key

    def _short(self, exc: BaseException, key: str | None) -> str:
        text = " ".join(str(exc).split())
        if key:
            text = text.replace(key, "***")
        text = _SECRETISH.sub("***", text)
        return text if len(text) <= _SHORT else text[: _SHORT - 3] + "..."

    def _kwargs(self, messages: list[dict], key: str | None) -> dict:
        kw: dict[str, Any] = {
            "model": self.cfg.id,
            "messages": cache_breakpoints(messages) if self._breakpoints else messages,
            "api_base": self.cfg.api_base,
            "api_key": key,
            "timeout": self.cfg.timeout_s,
            "max_tokens": self.cfg.max_tokens,
            "num_retries": 0,  # LiteLLM's own retry layer: off
            "max_retries": 0,  # the OpenAI SDK's retry layer: off
            "drop_params": True,
            **self.cfg.extra,
        }
        if self.cfg.temperature is not None:
            kw["temperature"] = self.cfg.temperature
        return kw

    def _cost(self, response: Any) -> float | None:
        hidden = getattr(response, "_hidden_params", None) or {}
        if "response_cost" in hidden:  # LiteLLM priced it already: not twice per call
            cost = hidden["response_cost"]
            return float(cost) if cost is not None else None
        try:
            cost = _litellm().completion_cost(completion_response=response)
        except Exception:  # unmapped model (ModelNotMappedError) or any pricing bug: unknown, never fatal
            return None
        return float(cost) if cost is not None else None

    def _limiter(self) -> Any:
        """The run's limiter, or a process-local one made on first use when the config sets rpm or tpm
        (an in-process run or a test honours the limits too); None: unlimited."""
        if self.limiter is None and (self.cfg.rpm or self.cfg.tpm or self.cfg.max_cost_usd is not None):
            with _LAZY:
                if self.limiter is None:
                    self.limiter = RateLimiter(self.cfg.rpm, self.cfg.tpm, clock=self.clock)
        return self.limiter

    def _limit(self, limiter: Any, method: str, *args: Any) -> float:
        """Call the limiter; one that fails (a lost actor) is logged and skipped: a limit never ends an episode."""
        try:
            return float(getattr(limiter, method)(*args) or 0.0)
        except Exception as exc:
            log.warning(
                "%s: rate limiter %s failed (%s: %s); going on without it", self.name, method, type(exc).__name__, exc
            )
            return 0.0

    # -- the call -------------------------------------------------------------------------------
    def complete(self, messages: list[dict]) -> Reply:
        call = _Call(self, messages, self._api_key())
        return call.reply(call.run())


class _Call:
    """One request and its retries, and what it has cost so far (HTTP attempts, backoff, limit
    waits): the usage of its Reply, or of the ModelError when the provider cannot answer."""

    def __init__(self, model: LiteLLMModel, messages: list[dict], key: str | None):
        self.model, self.key = model, key
        self.kwargs = model._kwargs(messages, key)
        self.limiter = model._limiter()
        self.est = estimate_messages(messages) + model.cfg.max_tokens if self.limiter is not None else 0  # on tpm
        self.attempts, self.latency, self.backoff, self.limit_wait = 0, 0.0, 0.0, 0.0

    def usage(self, answered: bool = False, **tokens) -> Usage:
        return Usage.of_call(self.attempts, answered, self.backoff, self.limit_wait, **tokens)

    def _failed(self, text: str, permanent: bool = False) -> ModelError:
        return ModelError(f"{self.model.name}: {text}", permanent=permanent, usage=self.usage())

    def attempt(self) -> Any:
        """One HTTP attempt; every attempt is a request the provider counts, retries included."""
        import openai  # installed with litellm

        cap = self.model.cfg.max_cost_usd  # checked before every attempt: a stop is at once
        if cap is not None and self.limiter is not None and (spent := self.model._limit(self.limiter, "spent")) >= cap:
            raise CostCapReached(CostLimit.RUN, spent, cap)
        if self.limiter is not None:
            wait = self.model._limit(self.limiter, "acquire", self.est)
            if wait > 0:
                self.model.sleep(wait)
                self.limit_wait += wait
        self.attempts += 1
        t0 = self.model.clock()
        try:
            response = _litellm().completion(**self.kwargs)
        except Exception as exc:
            if _is_retryable(exc):
                asked = _retry_after_s(exc) if self.limiter is not None and _is_rate_limited(exc) else None
                if asked is not None:  # capped like the backoff: one knob bounds a provider's say-so
                    self.model._limit(self.limiter, "pause", min(asked, self.model.cfg.backoff_max_s))
                raise
            if isinstance(exc, openai.OpenAIError):  # every LiteLLM exception derives from it
                status = getattr(exc, "status_code", None)
                short = self.model._short(exc, self.key)
                raise self._failed(f"not retryable (status {status}): {type(exc).__name__}: {short}", True) from None
            raise  # a bug on our side (bad arguments, ...): let it surface as itself
        self.latency = self.model.clock() - t0
        return response

    def _before_retry(self, state: tenacity.RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome is not None else None
        wait = state.next_action.sleep if state.next_action is not None else 0.0
        self.backoff += wait
        log.warning(
            "%s: attempt %d/%d failed with %s; retrying in %.2f s",
            self.model.name,
            state.attempt_number,
            self.model.cfg.max_retries + 1,
            type(exc).__name__,
            wait,
        )

    def run(self) -> Any:
        cfg = self.model.cfg
        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception(_is_retryable),
            wait=_Backoff(cfg.backoff_initial_s, cfg.backoff_max_s),
            stop=tenacity.stop_after_attempt(cfg.max_retries + 1),
            before_sleep=self._before_retry,
            sleep=self.model.sleep,
            reraise=True,
        )
        try:
            return retrying(self.attempt)
        except (ModelError, RunStopped):
            raise
        except Exception as exc:
            if not _is_retryable(exc):
                raise
            short = self.model._short(exc, self.key)
            raise self._failed(f"gave up after {self.attempts} attempts: {type(exc).__name__}: {short}") from None

    def reply(self, response: Any) -> Reply:
        usage = getattr(response, "usage", None)
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion = int(getattr(usage, "completion_tokens", 0) or 0)
        if self.limiter is not None and prompt + completion > 0:  # no usage reported: the estimate stands
            self.model._limit(self.limiter, "settle", self.est, prompt + completion)
        choices = getattr(response, "choices", None) or []
        if not choices:
            raise self._failed(f"the provider returned no choices (request {getattr(response, 'id', None)})")
        message = choices[0].message
        cost = self.model._cost(response)
        if cost and self.limiter is not None:
            self.model._limit(self.limiter, "charge", cost)
        tokens = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "reasoning_tokens": _reasoning_tokens(usage),
            **cache_tokens(usage),
        }
        return Reply(
            text=getattr(message, "content", None) or "",
            usage=self.usage(answered=True, **tokens, cost_usd=cost),
            latency_s=self.latency,
            request_id=getattr(response, "id", None),
            reasoning=getattr(message, "reasoning_content", None) or None,
        )
