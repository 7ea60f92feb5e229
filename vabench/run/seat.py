"""Seats: a run's episodes played by an outside party (an MCP client session, a person at a page)
through the same loop, boundary, record and row as any agent.

::

    seats = Seats(run)                         # a RunConfig (from_config); writes the run info
    seat = seats.take("mcp:client/1.0")        # the run's next unplayed episode, claimed; None: none left
    seat.brief, seat.observation               # what the agent learns at the start; what it sees now
    turn = seat.answer(Command({"action": "gripper.move_world", "axis": "z", "sign": "-", "distance_mm": 40}))
    turn.step, turn.budget_left, turn.feedback # after the loop has processed the answer
    turn.observation                           # what it is shown next (None once the episode is over)
    turn.refused                               # why the answer was refused (it cost one of the step's repairs)
    turn.end, turn.row                         # the end reason and the outcome row, once over
    seat.leave()                               # before the end: interrupted, no row; the next seat plays it
    seats.close()

``take(model)`` names the row's model (``model``: the agent's name in every row and record; the
run's episodes for that name); ``take(model, operator="op1")`` also fills row columns the taker
knows (a person's ``operator``). The seat claims its episode exclusively
(:mod:`vabench.run.folder.claims`): concurrent takes in one process or in several never get the
same episode, a seat left (or a process that ended) lets its episode go, and the next take plays
it again as the same attempt (the stale record is set aside, as after an interrupted driver). An
attempt whose record completed without its row gets its row from the record and is skipped.

The episode runs in a thread of its own through :func:`vabench.agents.episode.run_episode` with a
driven :class:`~vabench.core.boundary.Agent` whose ``act`` waits for :meth:`Seat.answer`: its
answers are validated as any agent's (a bad one is refused and costs a repair; too many end the
episode as ``repairs_exhausted``), tool calls are answered within the step, and the latency column
is the outside party's think time per step (from the observation's arrival to the answer's). The
row and the record are those of any agent (unprivileged), written to the run folder when the
episode ends. ``budget_left`` is always the loop's figure: what a model is shown of it is the
condition's (``observation=explained`` shows the budget, ``paper`` does not), and the caller shows
no more. A folder a live driver (``python -m vabench.launch``) holds is refused.

Summaries: under ``summary=expert`` or ``shared:<model>`` the episode carries the given summary as
a model's does (a missing shared one is refused at ``take``). Under ``summary=own`` a seat whose
model has no summary of the task's base task in the run's summary root starts in its summary stage
(``seat.study``, :class:`vabench.run.study.Study`): the outside party studies the demonstration and
writes its summary (:meth:`Seat.write_summary`), and only then does the episode start, carrying it;
a seat whose model wrote one before plays with it at once. ``take(model, author=...)`` keeps the
summary under another name in the store (a person's own: ``human:op1``), while the row's
``summary_model`` stays the model, as for any agent's own summary.
"""

from __future__ import annotations

import dataclasses
import queue
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from vabench.agents.episode import Episode, Runtime, run_episode
from vabench.agents.summaries.demo_tools import summary_task
from vabench.agents.summaries.summary_store import Summary, SummaryStore, resolve_summary, safe_model_id
from vabench.core.boundary import Agent, Answer, Brief, Feedback, Observation
from vabench.core.errors import RunLocked, SeatLeft, VabenchError
from vabench.core.vocab import EndReason, ObservationProfile, Status, SummaryKind
from vabench.envs import EnvConfig, VABenchEnv
from vabench.results.episodes import EpisodeSpec
from vabench.results.layout import DRIVER_LOCK, LEARNING, OUTCOMES
from vabench.results.outcomes import write_row
from vabench.results.outcometable import landed, statuses
from vabench.results.recordfile import EVENTS, Event, read_events
from vabench.results.records import set_aside
from vabench.run.config.run import RunConfig
from vabench.run.folder.claims import Claim, claim
from vabench.run.folder.lock import _pid_alive, _pid_checkable, _snapshot
from vabench.run.folder.recover import recorded_row
from vabench.run.folder.state import todo, write_run_info
from vabench.run.study import Shown, Study

# how a seat's episode ended, in words the outside party reads (the MCP result, the human page)
ENDS = {
    EndReason.SUCCESS: "the checker says the task is done",
    EndReason.BUDGET: "the step budget is spent",
    EndReason.STOP: "the player stopped it",
    EndReason.REPAIRS_EXHAUSTED: "too many refused decisions in one step",
    EndReason.CALL_LIMIT: "too many decisions in one step without an action",
}

_LEAVE = object()  # put in place of an answer: the outside party left
# the tags of what the episode thread tells its seat
_SHOWN, _ENDED, _GONE, _BROKE = object(), object(), object(), object()


class SeatOver(VabenchError, RuntimeError):
    """An answer to a seat whose episode is over (or was left)."""


@dataclass(frozen=True)
class Turn:
    """What one answer came to: the step and budget left after it, the feedback the condition shows,
    and the next observation, a refusal, or the episode's end with its row."""

    step: int
    budget: int
    budget_left: int
    feedback: Feedback | None = None
    observation: Observation | None = None
    refused: str | None = None  # the answer was refused (the protocol's error text); same observation
    end: str | None = None  # the row's end_reason once the episode is over: success, budget, ...
    row: dict | None = None

    @property
    def over(self) -> bool:
        return self.end is not None


class _Driven(Agent):
    """The agent a seat drives: ``act`` hands its observation out and waits for the outside answer."""

    def __init__(self, name: str):
        self.name = name
        self.brief: Brief | None = None
        # (_SHOWN, Observation, refusal) | (_ENDED, row, last feedback) | (_GONE,) | (_BROKE, error)
        self.events: queue.Queue = queue.Queue()
        self.answers: queue.Queue = queue.Queue()
        self.why: str | None = None

    def start(self, brief: Brief) -> None:
        self.brief = brief

    def refused(self, error: str) -> None:
        self.why = error

    def act(self, obs: Observation) -> Answer:
        why, self.why = self.why, None
        shown = time.perf_counter()
        self.events.put((_SHOWN, obs, why))
        answer = self.answers.get()
        if answer is _LEAVE:
            raise SeatLeft("the outside party left before the episode ended")
        return dataclasses.replace(answer, latency_s=time.perf_counter() - shown)  # its think time


class Seats:
    """A run's seats in this process: the envs they play on (one per seat in play, reused), the
    simulator lock they share, and the run's part of every row."""

    def __init__(self, run: RunConfig, log=print):
        _no_driver(run.run_dir)
        self.run, self.log = run, log
        self.part = {**run.identity, "provenance_digest": write_run_info(run, log)}
        self.sim_lock = threading.RLock()
        self.store = SummaryStore(run.summary_root)
        self._envs: list[VABenchEnv] = []  # free ones
        self._lock = threading.Lock()
        self._first: dict[str, int] = {}  # each episode's first attempt taken in this process
        self.seated: list[Seat] = []

    def pending(self, model: str) -> list[tuple[EpisodeSpec, int]]:
        """The run's episodes ``model`` has not played (no ``ok`` row), with their attempt, claimed or not."""
        named = dataclasses.replace(self.run, conditions=tuple(c.but(model=model) for c in self.run.conditions))
        return todo(named, self.log)[0]

    def take(self, model: str, author: str | None = None, **row) -> Seat | None:
        """The next unplayed episode, claimed and started (its first observation made, or its summary
        stage begun), or None. ``author``: whose own summary it carries (default ``model``); ``row``:
        columns of its row the taker fills (a person's ``operator``)."""
        with self._lock:
            for spec, attempt in self.pending(model):
                first = self._first.setdefault(spec.key, attempt)  # as the driver: max_attempts per launch
                if attempt > first + self.run.options.max_attempts - 1:
                    continue  # its infrastructure failed max_attempts times here: a rerun tries again
                held = claim(self.run.run_dir, spec.key)
                if held is None:
                    continue
                try:
                    if self._played(spec, attempt):
                        held.release()
                        continue
                    seat = Seat(self, spec, attempt, held, model, row, author)
                except BaseException:  # an unreadable row or record: the claim goes with the error
                    held.release()
                    raise
                self.seated.append(seat)
                break
            else:
                return None
        try:
            seat.begin()
        except BaseException:  # a missing shared summary, a demo that cannot be read: the claim goes
            seat.leave()
            raise
        return seat

    def _played(self, spec: EpisodeSpec, attempt: int) -> bool:
        """True once another seat judged it since the list was made, or its record completed
        without its row (written now from the record)."""
        file = spec.outcome_path(self.run.run_dir).relative_to(self.outcomes).as_posix()
        state = statuses(self.run.run_dir).get(file)
        if state is not None and (state[0] == Status.OK or not self.run.options.retry_infra or state[1] >= attempt):
            return True
        row = recorded_row(self.run, spec, attempt)
        if row is not None:
            self.write(spec, row)
        return row is not None

    @property
    def outcomes(self) -> Path:
        return self.run.run_dir / OUTCOMES

    def write(self, spec: EpisodeSpec, row: dict) -> None:
        write_row(spec.outcome_path(self.run.run_dir), row)
        landed(self.run.run_dir)

    def env(self, spec: EpisodeSpec) -> VABenchEnv:
        with self._lock:
            for env in self._envs:
                if env.config.look == spec.condition.look:
                    self._envs.remove(env)
                    return env
        with self.sim_lock:
            return VABenchEnv(EnvConfig.of(spec.condition, recording=self.run.recording))

    def free(self, env: VABenchEnv) -> None:
        with self._lock:
            self._envs.append(env)

    def close(self) -> None:
        """Leave every seat still in play (their episodes are played again later) and free the envs."""
        for seat in list(self.seated):
            seat.leave()
        with self.sim_lock, self._lock:
            for env in self._envs:
                env.close()
            self._envs.clear()


def _last_feedback(folder: Path, spec: EpisodeSpec) -> Feedback | None:
    """The episode's last action's feedback as the condition shows it (read from its record: no
    observation follows the last action)."""
    acted = [e for e in read_events(folder / EVENTS) if e.get("type") == Event.ACTION]
    if not acted:
        return None
    e = acted[-1]
    text = e.get("feedback") if spec.condition.observation != ObservationProfile.PAPER else None
    return Feedback(e["label"], bool(e["valid"]), bool(e["planner_success"]), text)


def _fresh(folder: Path, name: str) -> Path:
    """``folder/name``, or ``name-2``, ``name-3``, ... where it is taken (a stage left and begun
    again within the second)."""
    n, path = 1, folder / name
    while path.exists():
        n += 1
        path = folder / f"{name}-{n}"
    return path


def _no_driver(run_dir: Path) -> None:
    snap = _snapshot(Path(run_dir) / DRIVER_LOCK)
    info = snap[0] if snap is not None else None
    if info and _pid_checkable(info) and _pid_alive(int(info.get("pid", -1)), info.get("start_ticks")):
        raise RunLocked(f"run folder {run_dir} is in use by a driver (pid {info.get('pid')}); seats wait for it to end")


class Seat:
    """One episode played from outside (see the module's docstring)."""

    def __init__(self, seats: Seats, spec: EpisodeSpec, attempt: int, held: Claim, model: str, row=None, author=None):
        from vabench.envs.tasks import episode_budget

        self.seats, self.spec, self.attempt, self.claim = seats, spec, attempt, held
        self.part = {**seats.part, **(row or {})}  # the run's part of the row, and the taker's columns
        self.agent = _Driven(model)
        self.author = author or model  # whose own summary (summary=own) it carries, in the store
        self.budget = episode_budget(spec.condition, spec.task)
        self.observation: Observation | None = None
        self.refusal: str | None = None
        self.row: dict | None = None
        self.end: str | None = None
        self.last: Feedback | None = None  # the last action's feedback, once the episode is over
        self.left = False
        self.summary: Summary | None = None  # what the episode carries (where the condition has one)
        self.study: Study | None = None  # the summary stage, until the summary is written
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._play, name=f"seat-{spec.key}", daemon=True)

    @property
    def brief(self) -> Brief | None:
        return self.agent.brief

    @property
    def over(self) -> bool:
        return self.end is not None or self.left

    def begin(self) -> None:
        """Start the episode, or first its summary stage where the model has yet to write its summary."""
        seats, spec, author = self.seats, self.spec, self.author
        mode = spec.condition.summary
        if mode.kind == SummaryKind.OWN and not seats.store.has(author, spec.task):
            folder = seats.run.run_dir / LEARNING / summary_task(spec.task)
            name = f"{time.strftime('%Y%m%d-%H%M%S')}-{safe_model_id(author)}"
            record = _fresh(folder, name)
            with seats.sim_lock:  # recording a missing demonstration steps the simulator
                self.study = Study(seats.store, spec.task, author, seats.run.demo_root, spec.condition.render, record)
            return
        self.summary = self._own(resolve_summary(seats.store, mode, author, spec.task))
        self._thread.start()
        self._next()

    def write_summary(self, fields: dict) -> Shown | Turn:
        """The summary stage's end: ``fields`` stored as the model's summary and the episode started
        (its first turn), or the refusal (the stage goes on)."""
        with self._lock:
            if self.study is None:
                raise SeatOver(f"episode {self.spec.key} has no summary stage now")
            saved = self.study.write(fields)
            if isinstance(saved, Shown):
                return saved
            self.study, self.summary = None, self._own(saved)
            self._thread.start()
            return self._next()

    def _own(self, summary: Summary | None) -> Summary | None:
        """An own summary as the row names it: written by the seat's model (whoever's name keeps it)."""
        if summary is None or self.spec.condition.summary.kind != SummaryKind.OWN:
            return summary
        return dataclasses.replace(summary, summary_model=self.agent.name)

    def answer(self, answer: Answer) -> Turn:
        """Hand the loop one answer; returns once it has been processed."""
        with self._lock:
            if self.over:
                raise SeatOver(f"episode {self.spec.key} is over ({self.end or 'its player left'})")
            if self._thread.ident is None:
                raise SeatOver(f"episode {self.spec.key} has not started: its summary is written first")
            self.agent.answers.put(answer)
            return self._next()

    def leave(self) -> None:
        """End an episode still in play with no row (interrupted): the run plays it again later."""
        with self._lock:
            if self.over:
                return
            if self._thread.ident is None:  # in its summary stage (or never started): nothing to end
                if self.study is not None:
                    self.study.leave()
                self.study, self.left = None, True
                self._let_go(None)
                return
            self.agent.answers.put(_LEAVE)
            self._next()

    def turn(self) -> Turn:
        """Where the episode stands now."""
        obs = self.observation
        step = self.row["steps"] if self.row is not None else obs.step if obs is not None else 0
        feedback = self.last if self.end is not None else obs.feedback if obs is not None else None
        shown = obs if not self.over else None
        return Turn(step, self.budget, self.budget - step, feedback, shown, self.refusal, self.end, self.row)

    def _next(self) -> Turn:
        kind, *what = self.agent.events.get()
        if kind is _SHOWN:
            self.observation, self.refusal = what
        elif kind is _ENDED:
            self.row, self.end, self.refusal, self.last = what[0], what[0]["end_reason"], None, what[1]
        elif kind is _GONE:
            self.left = True
        else:
            self.end = EndReason.INFRA_ERROR  # nothing written: a later seat plays it again
            raise what[0]
        return self.turn()

    def _play(self) -> None:
        """The episode's thread; its last event is put once the claim and the env are let go, so
        whoever hears of the end can take the episode (or the env) at once."""
        seats, spec = self.seats, self.spec
        rel = Path(spec.place(self.attempt))
        folder = seats.run.run_dir / rel
        env, event = None, None
        try:
            set_aside(folder)  # a left attempt's record: kept aside, this one starts afresh
            env = seats.env(spec)
            episode = Episode(spec, self.attempt, self.summary, self.part)
            row = run_episode(env, self.agent, episode, folder, seats.run.harness, Runtime(seats.sim_lock))
            row.record = (rel / row.record).as_posix()
            seats.write(spec, row.row())
            event = (_ENDED, row.row(), _last_feedback(folder, spec))
        except SeatLeft:
            event = (_GONE,)
        except BaseException as e:  # a bug outside the loop: the caller hears of it; nothing is written
            event = (_BROKE, e)
        finally:
            self._let_go(env)
            self.agent.events.put(event)

    def _let_go(self, env: VABenchEnv | None) -> None:
        """The claim, the env and the seat's place among those in play, let go."""
        seats = self.seats
        self.claim.release()
        if env is not None:
            seats.free(env)
        with seats._lock:
            if self in seats.seated:
                seats.seated.remove(self)
