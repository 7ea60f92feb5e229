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

An episode is a value (:class:`Episode`: the spec, the attempt, the summary it carries and the
run's part of its row) and runs in a :class:`Runtime`: several episodes may run at once in one
process (threads, one env each), and ``Runtime.sim_lock`` is then the process's simulator lock, held
around every env call (reset, step, checker, expert) and never while the model is asked, so one
episode steps while the others wait for their models.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
import traceback
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path

from vabench.agents.chat import prompts
from vabench.agents.chat.agent import ChatAgent, check_chain
from vabench.agents.chat.dialogue import Dialogue, Direct, EpisodeEnd, Exchange
from vabench.agents.chat.harness_config import HarnessConfig
from vabench.agents.chat.model import Model, ModelError, Usage
from vabench.agents.chat.protocol import Decision, decision_of
from vabench.agents.chat.tools import EpisodeTools
from vabench.agents.summaries.summary_store import Summary, summary_identity
from vabench.core.boundary import Answer, Brief, Frame, Observation, Participant, Stop, observation_of, payload
from vabench.core.condition import LOOK, Condition
from vabench.core.errors import ConfigError, RunStopped
from vabench.core.interventions import manifest
from vabench.core.vocab import (
    ACTIVE,
    ControlMode,
    EndReason,
    ErrorKind,
    Intervention,
    ObservationProfile,
    Status,
    StepKind,
    arms_label,
    protocol_named,
)
from vabench.envs.actions import action_names
from vabench.envs.control import refusal
from vabench.envs.tasks import episode_budget
from vabench.results.episodes import EpisodeSpec
from vabench.results.media import episode_video
from vabench.results.outcomes import OutcomeRow
from vabench.results.recordfile import Event, record_digest
from vabench.results.records import RECORD_FORMAT, EpisodeRecord

__all__ = ["Episode", "EpisodeEnd", "HarnessConfig", "Runtime", "run_episode"]


def _serialised(expert: Callable, sim_lock) -> Callable:
    """The privileged expert reads live simulator state as it is iterated (inside the oracle's
    reply): each step of it runs under the simulator lock."""

    def run():
        end = object()
        with sim_lock:
            actions = iter(expert())
        while True:
            with sim_lock:
                action = next(actions, end)
            if action is end:
                return
            yield action

    return run


@dataclass(frozen=True)
class Episode:
    """One episode to run: what (``spec``), which infrastructure ``attempt``, the ``summary`` it
    carries (a :class:`Summary` or None) and the ``run``'s part of its row (run_id, experiment)."""

    spec: EpisodeSpec
    attempt: int = 1
    summary: Summary | None = None
    run: Mapping = field(default_factory=dict)

    @classmethod
    def of(cls, task: str, seed: int, protocol: str = ACTIVE.name, model: str = "", env=None, **condition) -> Episode:
        """An episode of ``task`` outside any run (tests, benchmarks): the track and base task come
        from the registered task; played on ``env``, its look (render preset, robot, perturbation)
        is the one the env was built for; ``model`` "" names it after the agent that plays it."""
        from vabench.envs.tasks import task_class

        t = task_class(task)
        look = dict(zip(LOOK, env.config.look, strict=True)) if env is not None else {}
        cond = Condition(model, protocol, **{**look, **condition})
        return cls(EpisodeSpec(cond, task, seed, track=t.track, base_task=t.summary_task))

    def identity(self) -> dict:
        """The row's identity: the run's part, the spec's, the attempt and what the summary was."""
        told = summary_identity(self.summary, self.spec.condition.summary_source)
        summary_model = self.summary.summary_model if self.summary is not None else None
        return {**self.run, **self.spec.identity(), **told, "summary_model": summary_model, "attempt": self.attempt}


@dataclass(frozen=True)
class Runtime:
    """How an episode shares its process: ``sim_lock``, the lock held around every env call; ``overdue()``,
    a reason once the episode has run out of time (checked before every model call: an infra error);
    ``counted(usage)``, told the episode's usage so far after every model call (the row's columns
    to be: the driver's progress bar shows them while the episode is in flight)."""

    sim_lock: AbstractContextManager = field(default_factory=contextlib.nullcontext)
    overdue: Callable[[], str | None] | None = None
    counted: Callable[[Usage], None] | None = None


def run_episode(
    env, agent: Participant, episode: Episode, out_dir: Path, config: HarnessConfig | None = None, runtime=None
) -> OutcomeRow:
    """Run ``episode`` with ``agent`` on ``env`` under ``config``, its record in ``out_dir``, and
    return its outcome row. ``agent`` is a chat :class:`Model` (asked through the chat harness) or
    an :class:`~vabench.core.boundary.Agent` that reads observations. ``env`` must be built for the
    spec's condition look (EnvConfig.of)."""
    config, runtime = config or HarnessConfig(), runtime or Runtime()
    spec = _played_on(episode.spec, agent, env)
    record = EpisodeRecord(Path(out_dir))
    started = time.perf_counter()
    row = OutcomeRow(
        **Episode(spec, episode.attempt, episode.summary, episode.run).identity(),
        record=str(record.path.relative_to(record.root)),
        privileged=bool(agent.privileged),
        prompt_version=prompts.PROMPT_VERSION,
        prompt_digest=prompts.prompt_digest(),
    )
    run = _Episode(env, agent, record, config, row, runtime, spec.condition)
    try:
        run.run(spec, episode.summary)
    except EpisodeEnd as end:
        row.end_reason, row.error, row.error_kind = end.reason, end.error, end.kind
    except ModelError as e:  # the agent refused the episode as it started (permanent: never retried)
        kind = ErrorKind.PERMANENT if e.permanent else ErrorKind.INFRA
        row.end_reason, row.error, row.error_kind = EndReason.INFRA_ERROR, f"model: {e}", kind
        record.event(Event.MODEL_ERROR, error=str(e), permanent=e.permanent)
    except RunStopped as e:  # a spending cap: interrupted, no result, never a failure or infra
        record.interrupted(e, time.perf_counter() - started)
        raise
    except Exception as e:  # the simulator (or the harness) crashed: infra, never a task failure
        row.end_reason, row.error, row.error_kind = EndReason.INFRA_ERROR, f"{type(e).__name__}: {e}", ErrorKind.INFRA
        record.event(Event.CRASH, error=traceback.format_exc(limit=8))
    except BaseException as e:  # Ctrl-C, or the process is told to exit: no result, nothing judged
        record.interrupted(e, time.perf_counter() - started)
        raise
    finally:
        with contextlib.suppress(Exception):  # the agent's end (a policy's connection closed) never costs the episode
            agent.end()
    run.finish(time.perf_counter() - started)
    row.record_digest = record_digest(record.root)  # all but the result, which carries it
    record.event(Event.RESULT, **row.row())
    record.close()
    _video(record, env.config.recording)
    return row


def _played_on(spec: EpisodeSpec, model: Participant, env) -> EpisodeSpec:
    """The spec, named after its agent when it names none (an episode outside a run); refused
    unless ``env`` was built for its condition's look (:meth:`vabench.envs.EnvConfig.of`)."""
    protocol_named(spec.protocol)  # UnknownName names the allowed protocols
    why = refusal(model, spec.condition.control)
    if why:
        raise ConfigError(why)
    if env.config.look != spec.condition.look:
        built = dict(zip(LOOK, env.config.look, strict=True))
        raise ValueError(f"the env was built for {built}, but this episode's condition is {spec.condition}")
    return spec if spec.condition.model else dataclasses.replace(spec, condition=spec.condition.but(model=model.name))


def _video(record: EpisodeRecord, recording) -> None:
    """The episode's mp4 from its recording views; a failure costs the video, never the result
    (``python -m vabench.review videos RUN`` makes it again)."""
    if not recording.video:
        return
    try:
        episode_video(record.root, recording.fps)
    except Exception:
        logging.getLogger(__name__).warning("no video for %s", record.root, exc_info=True)


class _Episode:
    """One episode's loop: its env, agent, record, row, tools and counters."""

    def __init__(self, env, agent, record: EpisodeRecord, config: HarnessConfig, row: OutcomeRow, runtime, condition):
        self.env, self.record, self.config, self.row = env, record, config, row
        self.sim_lock, self.overdue, self.counted = runtime.sim_lock, runtime.overdue, runtime.counted
        self.observation, self.intervention = condition.observation, Intervention(condition.intervention)
        self.tools = EpisodeTools(self._depth if self.intervention == Intervention.DEPTH_POINT else None)
        self.objects: list[dict] | None = None  # object_poses: the bodies at the current observation
        self.views: dict = {}  # views_5: the five observer views of the current observation
        if isinstance(agent, Model):  # a chat model is asked through the chat harness
            agent = ChatAgent(agent, record, config, self.tools.call, self.overdue, self.counted)
        self.agent, self.chat = agent, isinstance(agent, ChatAgent)
        self.exchange: Exchange | None = None  # the chat harness's dialogue, or the direct exchange
        self.brief: Brief | None = None
        self.executed: list[str] = []
        self.chain = 0

    def run(self, spec: EpisodeSpec, summary: Summary | None) -> None:
        budget = self.agent.step_budget(episode_budget(spec.condition, spec.task))  # the agent's own, if it has one
        with self.sim_lock:
            obs = self.env.reset(spec.task, spec.seed, spec.protocol, budget=budget)
            self.row.checkpoints_total = len(self.env.evaluate()["checkpoints"])
            self._intervene()
        self.row.arms, self.row.budget = arms_label(obs.arms), obs.budget
        self._start(obs, spec, summary)
        while True:
            answer = self._ask(self._observe(obs))
            if isinstance(answer, Stop):
                self.record.event(Event.STOP, step=obs.step, reason=answer.reason)
                raise EpisodeEnd(EndReason.STOP)
            obs = self._act(answer)

    def _start(self, obs, spec: EpisodeSpec, summary: Summary | None) -> None:
        """The record's start, the initial state, the agent's brief."""
        arms, camera = tuple(obs.arms), protocol_named(spec.protocol).camera_actions
        summary_text = summary.text() if summary else None
        self.record.event(
            Event.EPISODE_START,
            format=RECORD_FORMAT,
            task=obs.task,
            instruction=obs.instruction,
            seed=int(spec.seed),
            protocol=spec.protocol,
            model=self.agent.name,
            privileged=bool(self.agent.privileged),
            arms=list(arms),
            budget=obs.budget,
            prompt_version=prompts.PROMPT_VERSION,
            prompt_digest=prompts.prompt_digest(),
            summary_model=summary.summary_model if summary else None,
            summary=summary_text,  # as the system prompt carries it
            config={**self.config.__dict__, "observation": self.observation, "intervention": self.intervention},
        )
        with self.sim_lock:
            seen = self._evaluate(0, "reset")
        self._keep(0, *seen)
        expert = _serialised(self.env.expert, self.sim_lock) if self.agent.privileged else None
        self.brief = Brief(
            obs.task, int(spec.seed), arms, spec.protocol, obs.instruction, summary_text, spec.transfer,
            self.observation, self.intervention, action_names(arms, camera=camera), self.tools.names, expert,
            control=spec.condition.control,
        )  # fmt: skip
        self.agent.start(self.brief)
        self.exchange = (
            self.agent.dialogue
            if self.chat
            else Direct(self.agent, self.record, self.config, self.brief, self.overdue, self.counted)
        )

    def _ask(self, obs: Observation) -> Answer:
        """The agent's answer to ``obs``: a chat model's through the chat harness, which keeps its own
        record; any other agent's validated here as a model's decision is, tool calls answered."""
        if self.chat:
            return self.agent.act(obs)
        camera = protocol_named(obs.protocol).camera_actions

        def parse(obj: dict) -> Decision:
            control = self.brief.control == ControlMode.EE_DELTA
            decision = decision_of(obj, self.brief.arms, camera, self.tools.names, control)
            return check_chain(decision, self.chain, self.config)

        decision = self.exchange.ask_about(obs, parse, lambda d: self.tools.call(d.tool, d.args))
        return decision.answer()

    def _act(self, answer: Answer):
        """Dispatch one command (or control step) to the env, count and record it; the next env observation."""
        fields = {k: v for k, v in payload(answer).items() if k != "reason"}
        with self.sim_lock:
            step = self.env.step(fields)
            evaluation = self.env.evaluate()
            self._count(step, evaluation)
            seen = self._evaluate(step.step, step.observation.last_action, step.done)
            self._intervene()
        obs = step.observation
        self.record.event(
            Event.ACTION,
            step=step.step,
            label=obs.last_action,
            kind=step.kind,
            payload=fields,
            reason=answer.reason,
            valid=step.action_valid,
            planner_success=step.planner_success,
            feedback=step.feedback,
            success=step.success,
            checkpoints=evaluation["checkpoints"],  # evaluator-side only: never sent to the model
            **({"placement": evaluation["placement"]} if evaluation["placement"] is not None else {}),
        )
        self._keep(step.step, *seen)
        if step.done:
            raise EpisodeEnd(EndReason.SUCCESS if step.success else EndReason.BUDGET)
        return obs

    def finish(self, wall_s: float) -> None:
        """Close the row: status, success, what the calls cost, compactions, wall time."""
        r = self.row
        r.status = Status.INFRA_ERROR if r.end_reason == EndReason.INFRA_ERROR else Status.OK
        r.success = r.end_reason == EndReason.SUCCESS
        if self.exchange is not None:
            for key, value in self.exchange.usage.columns().items():
                setattr(r, key, value)
            r.repairs, r.tool_calls = self.exchange.repairs, self.exchange.tool_calls
            r.compactions = self.exchange.conv.compactions if isinstance(self.exchange, Dialogue) else 0
        r.wall_s = round(wall_s, 3)

    def _evaluate(self, step: int, label: str, last: bool = False) -> tuple:
        """The recording view (when due: RecordingConfig.due) and the evaluator-side state after
        reset or an action, for reviewers, videos and diagnostic proxies, never for the model
        (called under the simulator lock)."""
        config = self.env.config
        due = config.recording.due(step, last, config.control)
        return self.env.recording_view(f"step {step}: {label}") if due else None, self.env.evaluator_state()

    def _keep(self, step: int, view, state: dict) -> None:
        """Store them in the record (outside the simulator lock: other episodes may step)."""
        path = self.record.rel(self.record.save_recording(step, view)) if view is not None else None
        self.record.event(Event.STATE, step=step, recording=path, **state)

    def _count(self, step, evaluation: dict) -> None:
        r = self.row
        r.steps = step.step
        self.executed.append(step.observation.last_action)
        self.chain = self.chain + 1 if step.kind == StepKind.CAMERA else 0
        if step.kind == StepKind.CAMERA:
            r.camera_actions += 1
            r.camera_chain_over += int(self.chain > prompts.CAMERA_CHAIN_LIMIT)
        elif step.kind == StepKind.ROBOT:
            r.robot_actions += 1
            r.planner_failures += int(not step.planner_success)
        else:
            r.invalid_actions += 1
        progress = evaluation["checkpoints"]
        r.checkpoints_done, r.checkpoints_total = sum(map(bool, progress.values())), len(progress)
        if evaluation["objects_placed"] is not None:
            r.objects_placed = int(evaluation["objects_placed"])

    def _intervene(self) -> None:
        """What the intervention adds to the observation just made (under the simulator lock)."""
        if self.intervention == Intervention.OBJECT_POSES:
            self.objects = self.env.object_poses()
        elif self.intervention == Intervention.VIEWS_5:
            self.views = self.env.observer_views()

    def _depth(self, view: str, u: int, v: int):
        with self.sim_lock:
            return self.env.depth_point(view, u, v)

    def _images(self, obs) -> list[tuple[str, object, bool]]:
        """(view, pixels, passive encoding?) of the images this observation sends: the env's, less the
        views a view intervention leaves out, plus those it adds, less those the agent does not read."""
        bundle = protocol_named(obs.protocol).bundle
        views = manifest(self.intervention).views
        shown = [(k, rgb, bundle) for k, rgb in obs.images.items() if not (bundle and views) or k in views]
        shown += [(k, rgb, True) for k, rgb in self.views.items()]
        read = set(self.agent.reads(tuple(k for k, *_ in shown)))  # what it never reads is neither sent nor kept
        return [s for s in shown if s[0] in read]

    def _observe(self, obs) -> Observation:
        """The agent's observation of the env's: the frames saved as sent, the tools told, and the
        fields the condition shows (vabench.core.boundary: the privilege boundary)."""
        frames, sizes = [], {}
        for view, rgb, bundle in self._images(obs):
            path = self.record.save_frame(obs.step, view, rgb, self.env.config.preset.encoding(bundle))
            frames.append(Frame(view, rgb, path))
            sizes[view] = (rgb.shape[1], rgb.shape[0])
        self.tools.observe(obs.step, {f.view: f.file for f in frames}, obs.proprio, sizes)
        seen = observation_of(
            obs,
            tuple(frames),
            executed=tuple(self.executed),
            camera_chain=self.chain,
            explained=self.observation != ObservationProfile.PAPER,
            actions=self.brief.actions,
            tools=self.tools.names,
            summary=self.brief.summary,
            objects=self.objects,
        )
        return seen
