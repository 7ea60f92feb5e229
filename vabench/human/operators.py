"""The operators of a human study: each plays the run's next unplayed episode through a seat
(:mod:`vabench.run.seat`), one after another, and each row names its operator.

An :class:`Operator` turns the seat's state into what the page shows (:mod:`.shown`) and the
page's decisions into the boundary's answers (:func:`vabench.core.boundary.answer_of`, validated by
the loop as any agent's are). Decisions of one operator are handled one at a time. Under
``summary=own`` an operator's first episode of a task starts with its summary stage (the frames,
then the person's own summary, kept in the store as ``<model>:<operator>``: each person writes
their own, and their later episodes of the task carry it).
"""

from __future__ import annotations

import mimetypes
import threading
from collections.abc import Mapping

from vabench.core.boundary import answer_of
from vabench.core.errors import VabenchError
from vabench.envs.render import sent_bytes
from vabench.run.seat import ENDS, Seat, Seats
from vabench.run.study import Shown

from . import shown

OPERATOR = "operator"  # the row's column naming who played it
# the end's row as the page shows it: never the task's name, seed or budget, which a model is not told
ROW_SHOWN = ("protocol", "success", "end_reason", "steps", "invalid_actions", "model_latency_s", OPERATOR)


class BadDecision(VabenchError, ValueError):
    """A request the page never sends (not a JSON object): refused before the seat sees it."""


class Operator:
    """One person's place in the study: the seat in play (None before the first episode and after
    the last), the episodes taken so far. ``model``: the rows' model (``human``, or model.name):
    every operator plays the same condition, as the runs of one model do."""

    def __init__(self, name: str, seats: Seats, model: str, render: str, history_actions: int):
        self.name, self.seats, self.model, self.render, self.history = name, seats, model, render, history_actions
        self.seat: Seat | None = None
        self.taken = 0
        self.finished = False  # the run had no unplayed episode left when this operator asked
        self.refusal: str | None = None  # why the summary last sent was not accepted
        self._lock = threading.Lock()

    def state(self) -> dict:
        """What the page shows now; the first visit takes the operator's first episode."""
        with self._lock:
            if self.seat is None and not self.finished:
                self._take()
            return self._state()

    def next(self) -> dict:
        """The next unplayed episode, once the one in play is over."""
        with self._lock:
            if self.seat is None or self.seat.over:
                self._take()
            return self._state()

    def answer(self, decision: Mapping) -> dict:
        """Hand one decision (the paper's JSON form) to the seat; what the page shows after the loop
        has processed it."""
        if not isinstance(decision, Mapping):
            raise BadDecision('a decision is a JSON object: a command, a camera action or {"stop": true}')
        with self._lock:
            if self.seat is not None and not self.seat.over:
                self.seat.answer(answer_of(decision))
            return self._state()

    def summary(self, fields: Mapping) -> dict:
        """The person's own summary (the summary's fields) for the seat's summary stage; what the
        page shows next (the episode, or the stage again with the refusal)."""
        if not isinstance(fields, Mapping):
            raise BadDecision("a summary is a JSON object of its fields")
        with self._lock:
            if self.seat is not None and self.seat.study is not None:
                out = self.seat.write_summary(dict(fields))
                self.refusal = out.text if isinstance(out, Shown) else None
            return self._state()

    def demo_frame(self, episode: int, demo: str, i: int) -> tuple[bytes, str] | None:
        """A demonstration frame of the summary stage (counted as inspected) and its type, or None."""
        with self._lock:
            study = self.seat.study if self.seat is not None and episode == self.taken else None
            path = study.frame(demo, i) if study is not None else None
        return (path.read_bytes(), mimetypes.guess_type(path.name)[0] or "image/png") if path else None

    def image(self, episode: int, step: int, i: int) -> bytes | None:
        """The current observation's ``i``-th image as a model is sent it, or None."""
        seat = self.seat
        obs = seat.observation if seat is not None and not seat.over and episode == self.taken else None
        if obs is None or obs.step != step or not 0 <= i < len(obs.images):
            return None
        frame = obs.images[i]
        return sent_bytes(self.render, frame.view, frame.pixels, obs.protocol)

    def leave(self) -> None:
        with self._lock:
            if self.seat is not None:
                self.seat.leave()

    def _take(self) -> None:
        self.seat = self.seats.take(self.model, f"{self.model}:{self.name}", **{OPERATOR: self.name})
        self.refusal = None
        self.finished = self.seat is None
        self.taken += self.seat is not None

    def _state(self) -> dict:
        seat = self.seat
        if seat is None:
            return {"phase": "done", "episode": None, "end": None}
        if seat.study is not None:
            return {
                "phase": "studying",
                "episode": self.taken,
                "study": shown.studied(seat.study),
                "refused": self.refusal,
            }
        turn = seat.turn()
        if not turn.over:
            obs = turn.observation
            return {
                "phase": "playing",
                "episode": self.taken,
                "brief": shown.briefed(seat.brief),
                "obs": shown.seen(obs, seat.brief, self.history),
                "refused": turn.refused,
            }
        row = {k: turn.row.get(k) for k in ROW_SHOWN} if turn.row else {}
        end = {"reason": turn.end or "not finished", "text": ENDS.get(turn.end, "the episode ended"), "row": row}
        return {"phase": "over", "episode": self.taken, "end": end}


def study_over(operators: Mapping[str, Operator]) -> bool:
    """No operator has an episode in play and the run has none left to play."""
    if any(o.seat is not None and not o.seat.over for o in operators.values()):
        return False
    some = next(iter(operators.values()))
    return not some.seats.pending(some.model)
