"""The chat harness as one agent behind the boundary (vabench.core.boundary): it renders each
observation into the paper's prompt (:mod:`vabench.agents.chat.prompts`), asks a chat model through a
:class:`~vabench.agents.chat.dialogue.Dialogue` (repairs, tool calls, the per-step call limit), folds
old turns when the context fills (compaction) and parses the reply into a typed answer.

What a chat model receives is a pure rendering of the observation: the system prompt of the
:class:`~vabench.core.boundary.Brief`, then per step the text of :func:`prompts.step_text` and the
observation's frames as recorded. Its record events (turns, requests, replies, repairs,
decisions, tool results, compactions) are written here, in the order they happen.
"""

from __future__ import annotations

from vabench.agents.chat.model import Model
from vabench.core.boundary import Agent, Answer, Brief, Observation
from vabench.core.vocab import ObservationProfile, protocol_named
from vabench.results.recordfile import Event
from vabench.results.records import EpisodeRecord

from . import prompts
from .dialogue import Dialogue, record_paths
from .harness_config import HarnessConfig
from .history import USER, Conversation, ImageRef
from .protocol import CAMERA, Decision, ProtocolError, parse_decision


class ChatAgent(Agent):
    """One episode of a chat model: its conversation, dialogue and compaction digest. ``call_tool``
    answers the tool calls of its replies (the loop's tools: camera history, geometry, depth)."""

    def __init__(
        self, model: Model, record: EpisodeRecord, config: HarnessConfig, call_tool, overdue=None, counted=None
    ):
        self.model, self.record, self.config, self.call_tool = model, record, config, call_tool
        self.name, self.privileged = model.name, model.privileged
        self.overdue, self.counted = overdue, counted
        self.brief: Brief | None = None
        self.dialogue: Dialogue | None = None  # built with its conversation, at start
        self.digest_lines: list[tuple[int, str]] = []
        self.reason = ""  # the reason of the last decision (the digest line of its step)
        self.chain = 0

    def refuses(self, task: str, arms: tuple[str, ...], seed: int, protocol: str) -> str | None:
        return self.model.refuses(task, arms, seed, protocol)

    def step_budget(self, task_budget: int) -> int:
        return self.model.step_budget(task_budget)  # a replayed record's own budget

    def start(self, brief: Brief) -> None:
        """The system prompt, the conversation and its dialogue; then the model's own start."""
        self.brief = brief
        system = prompts.system_prompt(
            brief.task, brief.arms, brief.protocol, brief.summary, brief.transfer, brief.observation, brief.intervention
        )
        paper = brief.observation == ObservationProfile.PAPER
        conv = Conversation(system, protocol_named(brief.protocol).bundle, self.config, resend=not paper)
        self.dialogue = Dialogue(self.model, conv, self.record, self.config, self.overdue, self.counted)
        self.record.event(Event.TURN, role="system", kind="system", step=0, text=system, images=[])
        self.model.start_episode(brief)

    def act(self, obs: Observation) -> Answer:
        if obs.feedback is not None:
            self._digest_line(obs)
        self.chain = obs.camera_chain
        text = prompts.observation_text(
            obs, self.config.history_actions, self.brief.observation, self.brief.intervention
        )
        refs = [ImageRef(f.file, f"step {obs.step} {f.view}", f.pixels.shape[1], f.pixels.shape[0]) for f in obs.images]
        self.dialogue.conv.add(USER, text, "observation", obs.step, refs)
        self.record.event(
            Event.TURN, role=USER, kind="observation", step=obs.step, text=text, images=record_paths(self.record, refs)
        )
        digest = self.dialogue.conv.compact_if_needed(self._digest, prompts.COMPACTED)
        if digest:
            self.record.event(Event.COMPACTION, step=obs.step, text=digest, turns_kept=len(self.dialogue.conv.turns))
        decision = self.dialogue.ask(obs.step, self._parse, self._tool)
        self.reason = decision.reason
        return decision.answer()

    def _parse(self, text: str) -> Decision:
        camera = protocol_named(self.brief.protocol).camera_actions
        decision = parse_decision(text, self.brief.arms, camera, self.brief.tools)
        return check_chain(decision, self.chain, self.config)

    def _tool(self, decision: Decision):
        return self.call_tool(decision.tool, decision.args)

    def _digest_line(self, obs: Observation) -> None:
        """What compaction keeps of a step (under ``paper`` never the env's reason text)."""
        fb = obs.feedback
        outcome = ("valid" if fb.valid else "invalid") + (", planner ok" if fb.planner_success else ", planner failed")
        why = f" - {self.reason[:160]}" if self.reason else ""
        self.digest_lines.append((obs.step, f"step {obs.step}: {fb.action} ({outcome}){why}"))
        if fb.text:
            self.digest_lines.append((obs.step, f"  feedback: {fb.text[:300]}"))

    def _digest(self, first: int, last: int) -> str:
        lines = [text for s, text in self.digest_lines if first <= s <= last]
        return "\n".join(lines) or "(no actions)"


def check_chain(decision: Decision, chain: int, config: HarnessConfig) -> Decision:
    """``harness.enforce_camera_chain`` (an ablation): a camera action past the C.6 limit is refused."""
    if config.enforce_camera_chain and decision.kind == CAMERA and chain >= prompts.CAMERA_CHAIN_LIMIT:
        raise ProtocolError(prompts.CAMERA_CHAIN)
    return decision
