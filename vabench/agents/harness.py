"""The observe-decide-act loop (paper Section 3.5, Appendix D.1), identical for every model.

Per env step the harness sends the observation, asks for one decision and validates it. A bad
reply (no JSON, out of range) goes back to the model with the exact error, at most
``max_repairs`` times per step; tool calls are answered in the same thread
without advancing the simulator; at most ``max_calls_per_step`` model calls per step, tools and
repairs included. Camera and robot actions consume the step budget; the env checks success
after every one. The episode ends on success, stop, budget, exhausted repairs, the call limit,
or an infrastructure error (the provider could not answer, or the simulator crashed), which is
never scored as a task failure.

Only the env API is used; the one privileged call (the task expert) is handed to models that
declare ``privileged = True`` (the oracle), and their results say so.

Several episodes may run at once in one process (threads, one env each): ``sim`` is then the
process's simulator lock, held around every env call (reset, step, checker, expert) and never
while the model is asked, so one episode steps while the others wait for their models.
"""

from __future__ import annotations

import contextlib
import logging
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from vabench.media import episode_video
from vabench.outcomes import OutcomeRow
from vabench.vocab import INFRA_ERROR, OK, arms_label, protocol_named

from . import prompts
from .dialogue import PERMANENT, Dialogue, EpisodeEnd, record_paths
from .history import USER, Conversation, ImageRef
from .models import EpisodeContext, Model
from .protocol import CAMERA, STOP, Decision, ProtocolError, parse_decision
from .records import RECORD_FORMAT, EpisodeRecord
from .tools import EpisodeTools

__all__ = ["PERMANENT", "EpisodeEnd", "HarnessConfig", "run_episode"]


@dataclass(frozen=True)
class HarnessConfig:
    max_repairs: int = 2  # per env step; the next bad reply ends the episode
    max_calls_per_step: int = 20  # model calls per env step, tool calls and repairs included
    max_images: int = 4  # images per request; the current observation and the newest tool result always go (history.py)
    context_tokens: int = 200_000  # compaction threshold (estimated request tokens)
    keep_turns: int = 6  # observations kept verbatim when compacting
    history_actions: int = 20  # executed actions listed in each observation
    observation: str = "paper"  # paper | explained: what each observation tells the model (prompts.OBSERVATIONS)
    # Paper C.6: "the agent instruction limits camera-only chains to at most five consecutive actions": an
    # instruction (the system prompt says so); later camera actions execute and are counted in the row
    # (camera_chain_over). True (an ablation): the sixth in a row is rejected as a bad reply and costs a repair.
    enforce_camera_chain: bool = False

    def __post_init__(self):
        for key in ("max_repairs", "history_actions"):
            if getattr(self, key) < 0:
                raise ValueError(f"harness.{key} must be >= 0, got {getattr(self, key)}")
        for key in ("max_calls_per_step", "max_images", "context_tokens", "keep_turns"):
            if getattr(self, key) < 1:
                raise ValueError(f"harness.{key} must be >= 1, got {getattr(self, key)}")
        if self.observation not in prompts.OBSERVATIONS:
            raise ValueError(
                f"harness.observation must be one of {', '.join(prompts.OBSERVATIONS)}, got {self.observation!r}"
            )


def _serialised(expert: Callable, sim) -> Callable:
    """The privileged expert reads live simulator state as it is iterated (inside the oracle's
    reply): each step of it runs under the simulator lock."""

    def run():
        end = object()
        with sim:
            actions = iter(expert())
        while True:
            with sim:
                action = next(actions, end)
            if action is end:
                return
            yield action

    return run


def run_episode(
    env,
    model: Model,
    task,
    seed: int,
    out_dir: Path,
    protocol: str = "active",
    config: HarnessConfig | None = None,
    summary=None,
    summary_source: str = "none",
    transfer: bool = False,
    identity: dict | None = None,
    sim=None,
    overdue: Callable[[], str | None] | None = None,
) -> OutcomeRow:
    """Run one episode of ``model`` on (task, seed) and return its outcome row.

    ``summary`` is a :class:`vabench.agents.summary_store.Summary` (or None); ``identity`` holds
    the row's run identity (run_id, experiment, condition, track, base_task, run_index, attempt;
    see :class:`vabench.outcomes.OutcomeRow`), which the driver takes from the episode spec.
    ``sim``: a lock held around every env call (episodes sharing a process); ``overdue()``: a
    reason once the episode has run out of time, checked before every model call (an infra error).
    """
    config = config or HarnessConfig()
    protocol = protocol_named(protocol).name  # a Protocol or its name; ValueError names the allowed ones
    out_dir = Path(out_dir)
    record = EpisodeRecord(out_dir)
    started = time.perf_counter()
    result = OutcomeRow(
        **{
            "model": model.name,
            "protocol": protocol,
            "task": getattr(task, "name", task),
            "seed": int(seed),
            "summary_source": summary_source,
            **(identity or {}),
            "record": str(record.path.relative_to(out_dir)),
            "summary_model": getattr(summary, "summary_model", None),
            "privileged": bool(model.privileged),
            "prompt_version": prompts.PROMPT_VERSION,
            "prompt_digest": prompts.prompt_digest(),
            "observation": config.observation,
            "render": env.config.preset.name,
        }
    )
    dialogue = None
    try:
        episode = _Episode(env, model, record, config, result, sim or contextlib.nullcontext(), overdue)
        dialogue = episode.dialogue
        episode.run(task, seed, protocol, summary, transfer)
    except EpisodeEnd as end:
        result.end_reason, result.error = end.reason, end.error
    except Exception as e:  # the simulator (or the harness) crashed: infra, never a task failure
        result.end_reason, result.error = INFRA_ERROR, f"{type(e).__name__}: {e}"
        record.event("crash", error=traceback.format_exc(limit=8))
    except BaseException as e:  # Ctrl-C, or the process is told to exit: no result, nothing judged
        record.interrupted(e, time.perf_counter() - started)
        raise
    result.status = INFRA_ERROR if result.end_reason == INFRA_ERROR else OK
    result.success = result.end_reason == "success"
    if dialogue is not None:
        result.model_calls, result.repairs, result.tool_calls = (
            dialogue.answered,
            dialogue.repairs,
            dialogue.tool_calls,
        )
        result.provider_attempts, result.backoff_s = dialogue.attempts, round(dialogue.backoff_s, 3)
        result.provider_retries = dialogue.retries
        result.limit_wait_s = round(dialogue.limit_wait_s, 3)
        result.prompt_tokens, result.completion_tokens = dialogue.prompt_tokens, dialogue.completion_tokens
        result.reasoning_tokens = dialogue.reasoning_tokens
        result.cost_usd = dialogue.cost
        result.compactions = dialogue.conv.compactions if dialogue.conv else 0
    result.wall_s = round(time.perf_counter() - started, 3)
    record.event("result", **result.row())
    record.close()
    _video(record, getattr(env.config, "recording", None))
    return result


def _video(record: EpisodeRecord, recording) -> None:
    """The episode's mp4 from its recording views; a failure costs the video, never the result
    (``python -m vabench.review videos RUN`` makes it again)."""
    if recording is None or not recording.video:
        return
    try:
        episode_video(record.root, recording.fps)
    except Exception:
        logging.getLogger(__name__).warning("no video for %s", record.root, exc_info=True)


class _Episode:
    def __init__(
        self, env, model: Model, record: EpisodeRecord, config: HarnessConfig, result: OutcomeRow, sim, overdue
    ):
        self.env, self.model, self.record, self.config, self.result = env, model, record, config, result
        self.sim = sim
        self.tools = EpisodeTools()
        self.dialogue = Dialogue(model, None, record, config, overdue)
        self.executed: list[str] = []
        self.digest_lines: list[tuple[int, str]] = []
        self.chain = 0

    def run(self, task: str, seed: int, protocol: str, summary, transfer: bool) -> None:
        record, result, config = self.record, self.result, self.config
        with self.sim:
            obs = self.env.reset(task, seed, protocol)
            result.checkpoints_total = len(self.env.checkpoints())
        arms = tuple(obs.arms)
        result.arms = arms_label(arms)
        result.budget = obs.budget
        paper = config.observation == prompts.PAPER
        summary_text = summary.text() if summary else None
        system = prompts.system_prompt(obs.task, arms, protocol, summary_text, transfer, config.observation)
        proto = protocol_named(protocol)
        self.conv = Conversation(
            system, proto.bundle, config.max_images, config.context_tokens, config.keep_turns, resend=not paper
        )
        self.dialogue.conv = self.conv
        record.event(
            "episode_start",
            format=RECORD_FORMAT,
            task=obs.task,
            instruction=obs.instruction,
            seed=int(seed),
            protocol=protocol,
            model=self.model.name,
            privileged=bool(self.model.privileged),
            arms=list(arms),
            budget=obs.budget,
            prompt_version=prompts.PROMPT_VERSION,
            prompt_digest=prompts.prompt_digest(),
            summary_model=getattr(summary, "summary_model", None),
            summary=summary_text,  # as the system prompt below carries it
            config=config.__dict__,
        )
        with self.sim:
            seen = self._evaluate(0, "reset")
        self._keep(0, *seen)
        record.event("turn", role="system", kind="system", step=0, text=system, images=[])
        expert = _serialised(self.env.expert, self.sim) if self.model.privileged else None
        self.model.start_episode(EpisodeContext(obs.task, int(seed), arms, protocol, expert))
        camera = proto.camera_actions
        names = EpisodeTools.NAMES

        def parse(text: str) -> Decision:
            decision = parse_decision(text, arms, camera, names)
            if config.enforce_camera_chain and decision.kind == CAMERA and self.chain >= prompts.CAMERA_CHAIN_LIMIT:
                raise ProtocolError(prompts.CAMERA_CHAIN)
            return decision

        def tools(decision: Decision):
            return self.tools.call(decision.tool, decision.args)

        self._observe(obs)
        while True:
            digest = self.conv.compact_if_needed(self._digest, prompts.COMPACTED)
            if digest:
                record.event("compaction", step=obs.step, text=digest, turns_kept=len(self.conv.turns))
            decision = self.dialogue.ask(obs.step, parse, tools)
            if decision.kind == STOP:
                record.event("stop", step=obs.step, reason=decision.reason)
                raise EpisodeEnd("stop", None)
            with self.sim:
                step = self.env.step(decision.obj)
                self._count(decision, step)
                checkpoints, placement = self.env.checkpoints(), self._placement()
                seen = self._evaluate(step.step, step.observation.last_action)
            obs = step.observation
            record.event(
                "action",
                step=step.step,
                label=obs.last_action,
                kind=step.kind,
                payload=decision.obj,
                reason=decision.reason,
                valid=step.action_valid,
                planner_success=step.planner_success,
                feedback=step.feedback,
                success=step.success,
                checkpoints=checkpoints,  # evaluator-side only: never sent to the model
                **placement,
            )
            self._keep(step.step, *seen)
            if step.done:
                raise EpisodeEnd("success" if step.success else "budget", None)
            self._observe(obs)

    def _evaluate(self, step: int, label: str) -> tuple:
        """The recording view and the evaluator-side state after reset or an action, for reviewers,
        videos and diagnostic proxies, never for the model (called under the simulator lock)."""
        return self.env.recording_view(f"step {step}: {label}"), self.env.evaluator_state()

    def _keep(self, step: int, view, state: dict) -> None:
        """Store them in the record (outside the simulator lock: other episodes may step)."""
        path = self.record.rel(self.record.save_recording(step, view)) if view is not None else None
        self.record.event("state", step=step, recording=path, **state)

    def _placement(self) -> dict:
        """Per-object state of multi-object tasks (the basket track), for the record only."""
        placement = getattr(self.env.task, "placement", None)
        return {"placement": placement(self.env.privileged())} if callable(placement) else {}

    def _count(self, decision: Decision, step) -> None:
        r = self.result
        r.steps = step.step
        self.executed.append(step.observation.last_action)
        self.chain = self.chain + 1 if step.kind == "camera" else 0
        if step.kind == "camera":
            r.camera_actions += 1
            r.camera_chain_over += int(self.chain > prompts.CAMERA_CHAIN_LIMIT)
        elif step.kind == "robot":
            r.robot_actions += 1
            r.planner_failures += int(not step.planner_success)
        else:
            r.invalid_actions += 1
        progress = self.env.checkpoints()
        r.checkpoints_done, r.checkpoints_total = sum(map(bool, progress.values())), len(progress)
        placed = getattr(self.env.task, "objects_placed", None)
        if callable(placed):
            r.objects_placed = int(placed(self.env.privileged()))
        outcome = "valid" if step.action_valid else "invalid"
        outcome += ", planner ok" if step.planner_success else ", planner failed"
        why = f" - {decision.reason[:160]}" if decision.reason else ""
        self.digest_lines.append((step.step, f"step {step.step}: {step.observation.last_action} ({outcome}){why}"))
        if step.feedback and self.config.observation != prompts.PAPER:  # paper: the reason stays in the record
            self.digest_lines.append((step.step, f"  feedback: {step.feedback[:300]}"))

    def _digest(self, first: int, last: int) -> str:
        lines = [text for s, text in self.digest_lines if first <= s <= last]
        return "\n".join(lines) or "(no actions)"

    def _observe(self, obs) -> None:
        frames: dict[str, Path] = {}
        refs = []
        encoding = self.env.config.preset.encoding(protocol_named(obs.protocol).bundle)
        for view, rgb in obs.images.items():
            path = self.record.save_frame(obs.step, view, rgb, encoding)
            frames[view] = path
            refs.append(ImageRef(path, f"step {obs.step} {view}", rgb.shape[1], rgb.shape[0]))
        self.tools.observe(obs.step, frames, obs.proprio)
        text = prompts.step_text(obs, self.executed, self.chain, self.config.history_actions, self.config.observation)
        self.conv.add(USER, text, "observation", obs.step, refs)
        self.record.event(
            "turn", role=USER, kind="observation", step=obs.step, text=text, images=record_paths(self.record, refs)
        )
