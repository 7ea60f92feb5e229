"""The endpoint probe: before any work, one tiny request to the model's endpoint, so a dead server,
a mistyped host or a rejected key costs seconds and one plain line instead of minutes of retries
per episode.

One request of one token per distinct endpoint (model id, ``api_base``, key variable) and process:
a sequential multirun's jobs share it (a joblib sweep's jobs each send one). It takes a slot of the
key's shared rate budget (vabench.agents.models.keybudget) like any request. Only what retrying cannot fix
stops the run (a refused connection, an unknown host, a rejected key, an unknown model); a slow or
overloaded provider (timeout, 429, 5xx) gets a warning and the run goes on, where the client's own
retries deal with it.
"""

from __future__ import annotations

import os
import socket
import time
from urllib.parse import urlsplit

from vabench.agents.chat.model import ModelConfig
from vabench.agents.chat.tokens import estimate_messages
from vabench.agents.models.keybudget import book_once
from vabench.agents.models.kinds import agent_probe, is_offline
from vabench.core.errors import VabenchError

PROBE_TIMEOUT_S = 20.0
_probed: dict[tuple, str | None] = {}  # (model, api_base, key variable, policy url) -> the problem (None: fine)


class EndpointError(VabenchError, RuntimeError):
    """The endpoint cannot serve this run: one line naming the endpoint (or key variable) and the fix."""


def _causes(exc: BaseException):
    seen: BaseException | None = exc
    for _ in range(12):
        if seen is None:
            return
        yield seen
        seen = seen.__cause__ or seen.__context__


def _where(cfg: ModelConfig) -> str:
    return f"model.api_base={cfg.api_base}" if cfg.api_base else f"{cfg.id} (the provider's default endpoint)"


def _key_var(cfg: ModelConfig) -> str:
    if cfg.api_key_env:
        return f"${cfg.api_key_env} (model.api_key_env)"
    provider = cfg.id.split("/", 1)[0]
    return f"the provider's key variable (e.g. ${provider.upper()}_API_KEY) or model.api_key_env"


def classify(cfg: ModelConfig, exc: BaseException) -> tuple[bool, str]:
    """(fatal, one line) for the probe's exception: fatal when retrying cannot fix it."""
    from vabench.agents.models.llm import _is_client_config_error

    where, status = _where(cfg), getattr(exc, "status_code", None)
    if _is_client_config_error(exc):  # no request was sent: the SDK found no key
        return True, f"{where}: no API key was found; set {_key_var(cfg)}"
    for cause in _causes(exc):
        if isinstance(cause, ConnectionRefusedError) or "Connection refused" in str(cause):
            return True, f"{where}: connection refused (nothing listens there); start the server or fix model.api_base"
        if isinstance(cause, socket.gaierror) or "Name or service not known" in str(cause):
            host = urlsplit(cfg.api_base or "").hostname or "of the provider (is this machine online?)"
            return True, f"{where}: unknown host {host}; fix model.api_base"
    if status in (401, 403):
        return True, f"{where}: the key was rejected (HTTP {status}); check {_key_var(cfg)}"
    if status == 404:
        return True, f"{where}: model {cfg.id!r} not found there (HTTP 404); fix model.id or model.api_base"
    return False, f"{where}: the probe request failed ({type(exc).__name__}, HTTP {status}); going on"


def probe(cfg: ModelConfig, log=print) -> None:
    """Raise :class:`EndpointError` when the model's endpoint cannot serve the run; offline agents
    have none. A non-fatal problem is logged once and the run goes on."""
    own = agent_probe(cfg.id)  # an offline agent with an endpoint (the policy server) probes its own
    if is_offline(cfg.id) and own is None:
        return
    key = (cfg.id, cfg.api_base, cfg.api_key_env, str(cfg.extra.get("url")))
    if key not in _probed:
        _probed[key] = own(cfg) if own else _ask(cfg, log)
    if _probed[key]:
        raise EndpointError(_probed[key])


def _connect(cfg: ModelConfig) -> str | None:
    """A TCP connection to ``api_base``, before LiteLLM's few seconds of import: a refused
    connection or an unknown host is known in milliseconds."""
    if not cfg.api_base:
        return None
    url = urlsplit(cfg.api_base)
    if not url.hostname:
        return f"model.api_base={cfg.api_base}: not a URL (e.g. http://host:8000/v1); fix model.api_base"
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        socket.create_connection((url.hostname, port), timeout=min(cfg.timeout_s, PROBE_TIMEOUT_S)).close()
    except OSError as exc:
        fatal, line = classify(cfg, exc)
        return line if fatal else None  # a timeout: left to the request below and the client's retries
    return None


def _ask(cfg: ModelConfig, log) -> str | None:
    if cfg.api_key_env and not os.environ.get(cfg.api_key_env):
        return f"model.api_key_env names {cfg.api_key_env}, which is not set in this environment; export it"
    unreachable = _connect(cfg)
    if unreachable:
        return unreachable
    from vabench.agents.models.llm import _litellm

    ping = [{"role": "user", "content": "ping"}]
    time.sleep(book_once(cfg, estimate_messages(ping) + 1))  # the provider counts it: a slot of the key's budget
    try:
        _litellm().completion(
            model=cfg.id,
            messages=ping,
            api_base=cfg.api_base,
            api_key=os.environ.get(cfg.api_key_env) if cfg.api_key_env else None,
            timeout=min(cfg.timeout_s, PROBE_TIMEOUT_S),
            max_tokens=1,
            num_retries=0,
            max_retries=0,
            drop_params=True,
        )
    except Exception as exc:  # every provider error is judged here, once
        fatal, line = classify(cfg, exc)
        if fatal:
            return line
        log(f"probe: {line}")
    return None


def _served(run) -> dict | None:
    """The metadata a policy run's server sent the probe; None when the model is no policy or no
    probe read it."""
    from vabench.agents.models.kinds import OFFLINE_AGENTS
    from vabench.agents.models.policy import PolicyAgent, PolicyConfig, served

    agent = OFFLINE_AGENTS.get(run.model.id)
    if agent is None or agent.make is not PolicyAgent:
        return None
    return served.get(PolicyConfig.of(dict(run.model.extra)).url) or None


def trained_warning(run) -> str | None:
    """One warning line when a policy run evaluates seeds its checkpoint was trained on, as the
    metadata its server sent the probe says (vabench.agents.models.policy.trained_overlap); None
    when none overlap, the model is no policy, or no probe read the metadata."""
    from vabench.agents.models.policy import trained_overlap
    from vabench.run.config.specs import expand

    metadata = _served(run)
    return trained_overlap(metadata, {(spec.task, spec.seed) for spec in expand(run)}) if metadata else None


def control_refusal(run) -> str | None:
    """One line when a policy run's server serves actions for the other interface than the run's
    ``control`` (vabench.agents.models.policy.control_mismatch): refused before any episode."""
    from vabench.agents.models.policy import control_mismatch

    metadata = _served(run)
    return control_mismatch(metadata, run.condition.control) if metadata else None
