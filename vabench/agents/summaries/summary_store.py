"""Where summaries live and which one an episode uses (paper 3.3, Table 6; reference notes section 6).

:class:`SummaryStore` keeps one summary per (summary model, task), with the model that wrote it,
so the model-specific condition (``own``) and the shared-summary control (``shared:<model>``) read
the same files (:func:`resolve_summary`). Held-out variants reuse their base task's summary.
Files are written atomically and re-validated on every load. The author stays in the file and the
outcome row, never in the text a model reads (:meth:`Summary.text`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from vabench.core.errors import ConfigError
from vabench.core.vocab import SummaryKind, SummaryMode, summary_mode

from .demo_tools import is_int as _is_int
from .demo_tools import show_value as _show
from .demo_tools import summary_task
from .expert_summaries import AUTHOR, expert_fields
from .summary_schema import SUMMARY_FORMAT, SummaryError, validate_summary


def safe_model_id(model: str) -> str:
    """The file-system name of a model id (the true id is kept inside the file)."""
    if not isinstance(model, str):
        raise ConfigError(f"a model id must be a string; got {_show(model)}")
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", model)
    if safe.strip(".") == "":
        raise ConfigError(f"model id {model!r} cannot name a directory")
    return safe


@dataclass(frozen=True)
class Summary:
    """A stored summary: ``task`` is the task it was learned on (a held-out variant's base task)."""

    task: str
    summary_model: str
    fields: dict
    path: Path | None = None
    created_at: str | None = None
    frames_inspected: tuple[tuple[str, int], ...] = ()
    prompt_version: str | None = None

    def text(self) -> str:
        """The block the harness injects into prompts: a heading and the fields as sorted, indented JSON.
        It never names the author (the reference strips ``summary_model``): a reader told whose summary
        it holds would be primed in the summary-source study, so own and shared read the same way."""
        head = f"Summary of {self.task}, written from the RGB-only expert video:"
        return head + "\n" + json.dumps(self.fields, indent=2, sort_keys=True, ensure_ascii=False)

    def digest(self) -> str:
        """The outcome row's ``summary_digest``: which exact text the model received."""
        return text_digest(self.text())


def text_digest(text: str) -> str:
    """A 12-hex sha256 prefix (as ``prompt_digest``) of a summary text as injected into the prompt."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def _frames_list(frames: Any) -> list[list]:
    try:
        pairs = {(d, f) for d, f in frames}
    except (TypeError, ValueError):
        raise SummaryError(f"frames_inspected must be [demo, frame] pairs; got {_show(frames)}") from None
    for d, f in pairs:
        if not isinstance(d, str) or not d or not _is_int(f) or f < 0:
            raise SummaryError(f"frames_inspected entry {_show([d, f])} is not [demo name, frame index >= 0]")
    return [[d, f] for d, f in sorted(pairs)]


def _reject_constant(name: str) -> None:
    raise SummaryError(f"{name} is not valid JSON")


def _atomic_write(path: Path, text: str) -> None:
    """Write via a temp file in the same directory and ``os.replace``: readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


class SummaryStore:
    """Summaries by (summary model, task) at ``root/<safe model id>/<summary task>.json``."""

    def __init__(self, root: Path):
        self.root = Path(root)

    def path(self, model: str, task: str) -> Path:
        return self.root / safe_model_id(model) / f"{summary_task(task)}.json"

    def has(self, model: str, task: str) -> bool:
        return self.path(model, task).is_file()

    def save(
        self,
        model: str,
        task: str,
        summary: dict,
        frames_inspected: Iterable[tuple[str, int]],
        prompt_version: str | None = None,
    ) -> Path:
        """Validate and store ``model``'s summary of ``task`` (replacing its previous one)."""
        base = summary_task(task)
        if isinstance(summary, dict) and summary.get("summary_model") not in (None, model):
            raise SummaryError(
                f"field 'summary_model' is {_show(summary['summary_model'])}, but this summary is being saved "
                f"for {model!r}"
            )
        fields = validate_summary(summary, base)
        if prompt_version is not None and not isinstance(prompt_version, str):
            raise SummaryError(f"prompt_version must be a string or None; got {_show(prompt_version)}")
        path = self.path(model, task)
        self._check_owner(path, model)
        record = {
            "format": SUMMARY_FORMAT,
            "task": base,
            "summary_model": model,
            "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "frames_inspected": _frames_list(frames_inspected),
            "prompt_version": prompt_version,
            "summary": fields,
        }
        _atomic_write(path, json.dumps(record, indent=2, ensure_ascii=False, allow_nan=False) + "\n")
        return path

    def adopt(self, model: str, task: str, text: str) -> Summary:
        """Store a summary file written by :meth:`save` elsewhere (a worker on another node): the
        text as it was, validated first, so a bad one never replaces a good one."""
        path = self.path(model, task)
        self._check_owner(path, model)
        found = self._parse(text, path, model, task)
        _atomic_write(path, text)
        return found

    @classmethod
    def _check_owner(cls, path: Path, model: str) -> None:
        """Refuse to replace another model's summary (two model ids can map to one file name)."""
        other = cls._owner(path)
        if other not in (None, model):
            raise SummaryError(
                f"{path} holds the summary of model {other!r}; model ids {other!r} and {model!r} map to the same "
                "file name, use a different summary root for one of them"
            )

    @staticmethod
    def _owner(path: Path) -> str | None:
        """The summary_model recorded in an existing file (None if absent or unreadable)."""
        try:
            owner = json.loads(path.read_text()).get("summary_model")
        except (OSError, ValueError, AttributeError):
            return None
        return owner if isinstance(owner, str) else None

    def load(self, model: str, task: str) -> Summary | None:
        """``model``'s summary of ``task`` (re-validated), or None when none was stored."""
        path = self.path(model, task)
        return self._read(path, model, task) if path.is_file() else None

    @staticmethod
    def _read(path: Path, model: str, task: str) -> Summary:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise SummaryError(f"corrupt summary file {path}: {e}") from e
        return SummaryStore._parse(text, path, model, task)

    @staticmethod
    def _parse(text: str, path: Path, model: str, task: str) -> Summary:
        """The summary a file's text holds, validated (``path``: where it is or will be)."""
        base = summary_task(task)
        try:
            record = json.loads(text, parse_constant=_reject_constant)
            if not isinstance(record, dict):
                raise SummaryError("not a JSON object")
            if record.get("format") != SUMMARY_FORMAT:
                raise SummaryError(f"format is {_show(record.get('format'))}, not {SUMMARY_FORMAT!r}")
            if record.get("task") != base:
                raise SummaryError(f"task is {_show(record.get('task'))}, not {base!r}")
            if record.get("summary_model") != model:
                raise SummaryError(f"summary_model is {_show(record.get('summary_model'))}, not {model!r}")
            created, version = record.get("created_at"), record.get("prompt_version")
            if not isinstance(created, str) or (version is not None and not isinstance(version, str)):
                raise SummaryError("created_at must be a string and prompt_version a string or null")
            frames = tuple((d, f) for d, f in _frames_list(record.get("frames_inspected")))
            fields = validate_summary(record.get("summary"), base)
        except (OSError, UnicodeDecodeError, ValueError) as e:  # SummaryError and JSONDecodeError included
            raise SummaryError(f"corrupt summary file {path}: {e}") from e
        return Summary(base, model, fields, path, created, frames, version)


def resolve_summary(store: SummaryStore, mode: str | SummaryMode, evaluated_model: str, task: str) -> Summary | None:
    """The summary an episode of ``task`` uses. ``own``: the evaluated model's (None if it has not
    learned one yet; the caller runs the learning episode first). ``none``: None. ``shared:<m>``:
    m's summary, which must exist (a shared-summary control never silently falls back)."""
    mode = summary_mode(mode)
    if mode.kind == SummaryKind.NONE:
        return None
    if mode.kind == SummaryKind.OWN:
        return store.load(evaluated_model, task)
    if mode.kind == SummaryKind.EXPERT:  # the expert-written control: in the code, never learned
        base, fields = expert_fields(task)
        return Summary(base, AUTHOR, fields)
    source = mode.source
    found = store.load(source, task)
    if found is None:
        base = summary_task(task)
        raise SummaryError(
            f"summary mode shared:{source}: {store.path(source, task)} is missing (no summary of {base} by "
            f"{source}); create it by running the learning episode for {base} with model {source} and this "
            "summary root, or copy that file from the summary root where it was learned"
        )
    return found


def summary_identity(summary: Summary | None, mode: str | SummaryMode) -> dict:
    """The row's ``summary_learned`` and ``summary_digest`` for an episode run with ``summary``:
    an ``own`` episode whose learning ended without a summary runs without one, and says so."""
    asked = summary_mode(mode).kind != SummaryKind.NONE
    return {
        "summary_learned": (summary is not None) if asked else None,
        "summary_digest": summary.digest() if summary is not None else None,
    }
