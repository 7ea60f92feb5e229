"""A judge's reply, untrusted: one JSON object in the label file's own shape (``gates``, ``labels``,
``steps``), checked by ``labels.validate`` and against the episode (a cited step exists; a label
that is 0 or 1 cites one). Any fault is a :class:`AnswerError` whose text is the repair prompt."""

from __future__ import annotations

from datetime import UTC, datetime

from vabench.agents.chat.protocol import ProtocolError, extract_json
from vabench.analysis import labels as L
from vabench.core.errors import VabenchError


class AnswerError(VabenchError, ValueError):
    """A judge reply that is not a usable label; the text says why, for the repair prompt."""


def parse(text: str, record: str, annotator: str, last_step: int, notes: str = "") -> dict:
    """The label a reply gives (``labels.validate``'s shape), or :class:`AnswerError`."""
    try:
        obj = extract_json(text)
    except ProtocolError as e:
        raise AnswerError(str(e)) from None
    unknown = set(obj) - {"gates", "labels", "steps"}
    if unknown:
        raise AnswerError(f"unknown field(s) {', '.join(sorted(unknown))}; answer with gates, labels and steps only")
    try:
        label = L.validate({**obj, "record": record, "annotator": annotator, "notes": notes}, now=datetime.now(UTC))
    except L.LabelError as e:
        raise AnswerError(str(e)) from None
    steps = label.get("steps", {})
    late = {c: k for c, k in steps.items() if k > last_step}
    if late:
        raise AnswerError(f"steps {late} name steps after the episode's last step {last_step}")
    missing = [c for c, v in label["labels"].items() if v is not None and c not in steps]
    if missing:
        raise AnswerError(f"steps must name the step each 0/1 label rests on; missing for {', '.join(missing)}")
    return label
