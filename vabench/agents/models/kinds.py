"""Which model ids name an offline agent, and the one factory that turns a :class:`ModelConfig`
into an agent: a chat :class:`~vabench.agents.chat.model.Model` (LiteLLM) or an agent that reads
observations (vabench.core.boundary).

Offline agents (no network, no key) are listed here with what they need; every other id is a
LiteLLM provider string. Whether an agent is privileged (reads simulator state) is a property of
the agent instance (``privileged``): the replay agent inherits it from the record it replays.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from vabench.agents.chat.model import ModelConfig
from vabench.core.boundary import Participant
from vabench.core.errors import ConfigError, UnknownName
from vabench.core.registry import Registry
from vabench.core.vocab import CacheMode

from .cache import CachedModel
from .llm import LiteLLMModel
from .offline import HUMAN, PEOPLE, OracleAgent, RandomAgent, Seated, replay
from .policy import PolicyAgent
from .policy import probe as policy_probe
from .posetext import PosetextAgent
from .servo import ServoAgent


@dataclass(frozen=True)
class OfflineAgent:
    name: str
    make: Callable[[ModelConfig], Participant]
    about: str
    requires: tuple[str, ...] = ()  # ModelConfig.extra keys that must be set
    probe: Callable[[ModelConfig], str | None] | None = None  # an agent with an endpoint: why it cannot serve
    seated: bool = False  # plays from outside through a seat (vabench.run.seat): the launcher refuses it
    reads_summary: bool = False  # reads the condition's summary (and writes its own under summary=own)


def _replay(cfg: ModelConfig) -> Participant:
    return replay(Path(cfg.extra["record"]), cfg.name)


OFFLINE_AGENTS: Registry[OfflineAgent] = Registry(
    "offline agent",
    (
        (a.name, a)
        for a in (
            OfflineAgent(
                "oracle",
                lambda cfg: OracleAgent(cfg.name or "oracle"),
                "the privileged scripted expert: a harness ceiling, never a model score",
            ),
            OfflineAgent(
                "random",
                lambda cfg: RandomAgent(cfg.name or "random", int(cfg.extra.get("seed", 0))),
                "uniformly random valid decisions: the floor",
            ),
            OfflineAgent("replay", _replay, "the replies of an earlier episode record (its events.jsonl)", ("record",)),
            OfflineAgent(
                "servo",
                lambda cfg: ServoAgent(cfg.name or "servo"),
                "visual servoing from the request's images and robot state only (not privileged): a solvability "
                "reference",
            ),
            OfflineAgent(
                "policy",
                PolicyAgent,
                "a policy server speaking the openpi websocket protocol (model.extra.url; docs/policy.md)",
                ("url",),
                policy_probe,
            ),
            OfflineAgent(
                "mcp",
                lambda cfg: Seated(cfg.name or "mcp"),
                "an MCP client plays each episode through python -m vabench.mcp (docs/mcp.md), never the launcher",
                seated=True,
                reads_summary=True,
            ),
            OfflineAgent(  # played through seats too, but the launcher serves its page (vabench.human)
                HUMAN,
                lambda cfg: Seated(cfg.name or HUMAN, PEOPLE),
                "people at a web page, each decision through the same boundary (human.operators=N; docs/human.md)",
                reads_summary=True,
            ),
            OfflineAgent(
                "posetext",
                lambda cfg: PosetextAgent(cfg.name or "posetext"),
                "a fixed procedure from the request text under intervention=object_poses (no image, no simulator)",
            ),
        )
    ),
    "model=NAME, or model.id=<provider>/<name> for a hosted model",
)
PROVIDER_EXAMPLES = "openai/<name>, anthropic/<name>, gemini/<name>, hosted_vllm/<name>, ollama_chat/<name>"


def agent_probe(model_id: str) -> Callable[[ModelConfig], str | None] | None:
    """The endpoint probe of an agent that is not a LiteLLM model but has an endpoint (the policy)."""
    agent = OFFLINE_AGENTS.get(model_id)
    return agent.probe if agent is not None else None


def seated(model_id: str) -> str | None:
    """How an agent that plays from outside through a seat is run (one line), or None: the launcher runs it."""
    agent = OFFLINE_AGENTS.get(model_id)
    return agent.about if agent is not None and agent.seated else None


def is_offline(model_id: str) -> bool:
    return model_id in OFFLINE_AGENTS


def reads_no_summary(model_id: str) -> bool:
    """An offline agent that reads no summary: its runs are summary=none whatever was asked (the
    seated ones, an MCP client or a person, read theirs and write their own)."""
    agent = OFFLINE_AGENTS.get(model_id)
    return agent is not None and not agent.reads_summary


def check_model_id(model_id: object) -> str:
    """``model_id`` if it names an offline agent or looks like a LiteLLM provider string, else a
    ValueError that lists both forms."""
    if not isinstance(model_id, str) or not model_id.strip():
        raise ConfigError(f"a model id must be a non-empty string ({', '.join(OFFLINE_AGENTS)} or a LiteLLM string)")
    if not is_offline(model_id) and "/" not in model_id:
        raise UnknownName(
            "model", model_id, OFFLINE_AGENTS, f"or a LiteLLM provider string such as {PROVIDER_EXAMPLES}"
        )
    return model_id


def make_model(cfg: ModelConfig) -> Participant:
    """The model a config names: an offline agent (ValueError when an ``extra`` key it requires is
    missing), else the LiteLLM client."""
    agent = OFFLINE_AGENTS.get(cfg.id)
    if agent is None:  # offline agents answer free and keep their own state: never cached
        return LiteLLMModel(cfg) if cfg.cache == CacheMode.OFF else CachedModel(LiteLLMModel(cfg), cfg)
    for key in agent.requires:
        if not cfg.extra.get(key):
            raise ConfigError(f"'model.extra.{key}' must be set when model.id={agent.name} ({agent.about})")
    return agent.make(cfg)
