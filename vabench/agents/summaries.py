"""Demonstration summaries: the schema of the summary a model writes, where summaries are kept, and
which summary an evaluation uses (paper section 3.3 and appendices C.8/D.3; reference notes
section 6). The demo tools the model learns from are in :mod:`vabench.agents.demo_tools`.

* A summary is structured text. :func:`validate_summary` enforces the reference's fields plus size
  limits, so a summary cannot smuggle a trajectory dump or bloat every prompt it is injected into,
  and for the composite basket task it cannot copy the learning scene's inventory.
* :class:`SummaryStore` keeps one summary per (summary model, task), with the model that wrote it,
  so the model-specific condition (``own``) and the shared-summary control (``shared:<model>``)
  read the same files (:func:`resolve_summary`). Held-out variants reuse their base task's summary.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .demo_tools import is_int as _is_int
from .demo_tools import show_value as _show
from .demo_tools import summary_task, task_demos

SUMMARY_FORMAT = "vabench.summary.v1"
MAX_STRING_CHARS = 2000
MAX_LIST_ITEMS = 20
MAX_SUMMARY_BYTES = 16_000  # UTF-8 JSON of the validated fields
MODES = ("own", "none", "shared:<model id>")


class SummaryError(ValueError):
    """A summary (or a stored summary file) is not acceptable; the message names the field or path."""


# ---------------------------------------------------------------------------------------------
# Summary schema

REQUIRED_TEXT = (
    "grasp_object_part",
    "grasp_region",
    "grasp_height_or_depth",
    "finger_placement",
    "approach_strategy",
    "posture_or_rotation",
    "test_lift_rule",  # legacy name: the post-close *completion* lift, not a 20-30 mm test lift
)
REQUIRED_LIST = "pre_close_checks"
OPTIONAL_TEXT = ("task_stage", "post_grasp_goal")
OPTIONAL_TEXT_LISTS = ("functional_constraints", "safety_notes", "avoid_roles")
DUAL_ARM_EVIDENCE = ("arm_assignment", "coordination_sequence", "synchronized_actions", "release_or_completion_rule")
AFFORDANCE_ENUMS = {
    "part_shape": ("unknown", "slender_cylinder", "broad_cylinder", "box", "handle", "flat", "irregular"),
    "symmetry_class": ("unknown", "continuous", "two_fold", "four_fold", "asymmetric"),
    "centering_tolerance": ("unknown", "strict", "moderate", "permissive"),
    "vertical_tolerance": ("unknown", "strict", "moderate", "permissive"),
}
AFFORDANCE_FLAGS = ("avoid_ends", "requires_bilateral_contact", "requires_dual_arm")
SUMMARY_FIELDS = (
    *REQUIRED_TEXT,
    REQUIRED_LIST,
    *OPTIONAL_TEXT,
    *OPTIONAL_TEXT_LISTS,
    "required_arms",
    "semantic_ambiguity",
    "affordance_profile",
    *DUAL_ARM_EVIDENCE,
    "object_strategies",  # composite (several-demo) tasks only; dropped elsewhere
)

# The basket task is learned from scenes whose object inventory differs from the evaluation
# scene's; a summary that says "two bottles" or "cube A" would teach the wrong inventory.
_COUNT_WORDS = r"two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|[2-9]|[1-9]\d+"
_PLURAL_OBJECTS = r"cubes|blocks|bottles|pens|objects|items"
_UNITS = r"mm|cm|m|deg|degrees|seconds|s|percent"
_INVENTORY_COUNT = re.compile(
    rf"\b(?:{_COUNT_WORDS})(?:\s+(?!(?:{_UNITS})\b)[a-z-]+)?\s+(?:{_PLURAL_OBJECTS})\b", re.IGNORECASE
)
# Capital letter labels (A..W: I reads as a pronoun, X/Y/Z as axes) or numbered labels (#2, no. 2).
_INVENTORY_LABEL = re.compile(
    r"\b(?i:cube|block|bottle|pen|object|item)s?(?:[ \t]+|[-_])(?:[A-HJ-W]|#[ \t]?\d+|(?i:no)\.[ \t]?\d+)(?![\w'’-])"
)


class _Checker:
    """Collects every problem of one summary, so a model can fix them all in one repair turn."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    def text(self, field: str, v: Any) -> str | None:
        if not isinstance(v, str) or not v.strip():
            self.errors.append(f"field '{field}' must be a non-empty string; got {_show(v)}")
            return None
        v = v.strip()
        if len(v) > MAX_STRING_CHARS:
            self.errors.append(
                f"field '{field}' is {len(v)} characters long ({_show(v)}); at most {MAX_STRING_CHARS} allowed"
            )
            return None
        return v

    def text_list(self, field: str, v: Any, min_items: int = 0) -> list[str] | None:
        what = "a non-empty list of non-empty strings" if min_items else "a list of non-empty strings"
        if not isinstance(v, list) or len(v) < min_items:
            self.errors.append(f"field '{field}' must be {what}; got {_show(v)}")
            return None
        if len(v) > MAX_LIST_ITEMS:
            self.errors.append(f"field '{field}' has {len(v)} items ({_show(v)}); at most {MAX_LIST_ITEMS} allowed")
            return None
        out = [self.text(f"{field}[{i}]", item) for i, item in enumerate(v)]
        return None if None in out else out


def _strings(value: Any, where: str) -> Iterable[tuple[str, str]]:
    """Every (location, text) in a validated value; object keys count as text too."""
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _strings(item, f"{where}[{i}]")
    elif isinstance(value, dict):
        for k, item in value.items():
            yield f"{where} key", str(k).replace("_", " ")
            yield from _strings(item, f"{where}.{k}")


def validate_summary(obj: Any, task_name: str) -> dict:
    """The accepted fields of a summary for ``task_name``, stripped, in schema order; unknown fields
    (and ``object_strategies`` outside composite tasks) are dropped and an optional field given as
    null counts as absent. Raises SummaryError listing every problem (field, value, what is allowed)."""
    if not isinstance(obj, dict):
        raise SummaryError(f"a summary must be a JSON object with the summary fields; got {_show(obj)}")
    composite = len(task_demos(task_name)) > 1
    c = _Checker()
    out: dict[str, Any] = {}

    missing = [f for f in (*REQUIRED_TEXT, REQUIRED_LIST) if f not in obj]
    for f in missing:
        what = "a non-empty list of non-empty strings" if f == REQUIRED_LIST else "a non-empty string"
        c.errors.append(f"required field '{f}' is missing; it must be {what}")
    for f in REQUIRED_TEXT:
        if f in obj:
            out[f] = c.text(f, obj[f])
    if REQUIRED_LIST in obj:
        out[REQUIRED_LIST] = c.text_list(REQUIRED_LIST, obj[REQUIRED_LIST], min_items=1)

    present = {k: v for k, v in obj.items() if v is not None}
    for f in OPTIONAL_TEXT:
        if f in present:
            out[f] = c.text(f, present[f])
    for f in OPTIONAL_TEXT_LISTS:
        if f in present:
            out[f] = c.text_list(f, present[f])
    if "required_arms" in present:
        v = present["required_arms"]
        if _is_int(v) and v in (1, 2):
            out["required_arms"] = v
        else:
            c.errors.append(f"field 'required_arms' must be the integer 1 or 2; got {_show(v)}")
    if "semantic_ambiguity" in present:
        v = present["semantic_ambiguity"]
        if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and 0 <= v <= 1:
            out["semantic_ambiguity"] = v
        else:
            c.errors.append(f"field 'semantic_ambiguity' must be a finite number in [0, 1]; got {_show(v)}")
    if "affordance_profile" in present:
        out["affordance_profile"] = _affordance(c, present["affordance_profile"])
    for f in DUAL_ARM_EVIDENCE:
        if f in present:
            v = present[f]
            if isinstance(v, list):
                out[f] = c.text_list(f, v, min_items=1)
            elif isinstance(v, str):
                out[f] = c.text(f, v)
            else:
                c.errors.append(
                    f"field '{f}' must be a non-empty string or a list of non-empty strings; got {_show(v)}"
                )
    if composite and "object_strategies" in present:
        out["object_strategies"] = _object_strategies(c, present["object_strategies"])

    if composite:
        for f, v in out.items():
            if v is None:
                continue
            for where, text in _strings(v, f):
                hit = _INVENTORY_COUNT.search(text) or _INVENTORY_LABEL.search(text)
                if hit:
                    c.errors.append(
                        f"field '{where}' encodes the learning scene's inventory ({hit.group(0)!r}); the evaluation "
                        "scene has a different inventory, so describe a strategy per object type without counts "
                        "or object labels"
                    )
    if not c.errors:
        size = len(json.dumps(out, ensure_ascii=False).encode())
        if size > MAX_SUMMARY_BYTES:
            c.errors.append(f"the summary is {size} bytes of JSON; at most {MAX_SUMMARY_BYTES} allowed")
    if c.errors:
        raise SummaryError("invalid summary: " + "; ".join(c.errors))
    return out


def _affordance(c: _Checker, v: Any) -> dict | None:
    keys = (*AFFORDANCE_ENUMS, *AFFORDANCE_FLAGS)
    if not isinstance(v, dict):
        c.errors.append(f"field 'affordance_profile' must be an object with keys {', '.join(keys)}; got {_show(v)}")
        return None
    missing = [k for k in keys if k not in v]
    if missing:
        c.errors.append(f"field 'affordance_profile' lacks {', '.join(missing)}; all of {', '.join(keys)} are required")
        return None
    ok = True
    for k, allowed in AFFORDANCE_ENUMS.items():
        if not isinstance(v[k], str) or v[k] not in allowed:
            c.errors.append(f"field 'affordance_profile.{k}' is {_show(v[k])}; allowed: {', '.join(allowed)}")
            ok = False
    for k in AFFORDANCE_FLAGS:
        if not isinstance(v[k], bool):
            c.errors.append(f"field 'affordance_profile.{k}' must be true or false; got {_show(v[k])}")
            ok = False
    return {k: v[k] for k in keys} if ok else None


def _object_strategies(c: _Checker, v: Any) -> dict | None:
    if not isinstance(v, dict) or not v:
        c.errors.append(
            "field 'object_strategies' must be a non-empty object mapping an object type to its strategy; "
            f"got {_show(v)}"
        )
        return None
    if len(v) > MAX_LIST_ITEMS:
        c.errors.append(f"field 'object_strategies' has {len(v)} entries; at most {MAX_LIST_ITEMS} allowed")
        return None
    out = {}
    for k, item in v.items():
        key = k.strip() if isinstance(k, str) else ""
        if not key or len(key) > 100:
            c.errors.append(f"field 'object_strategies' has a bad key {_show(k)}; keys are names of 1..100 characters")
            continue
        out[key] = c.text(f"object_strategies.{key}", item)
    return out if None not in out.values() and len(out) == len(v) else None


# ---------------------------------------------------------------------------------------------
# Storage


def safe_model_id(model: str) -> str:
    """The file-system name of a model id (the true id is kept inside the file)."""
    if not isinstance(model, str):
        raise ValueError(f"a model id must be a string; got {_show(model)}")
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", model)
    if safe.strip(".") == "":
        raise ValueError(f"model id {model!r} cannot name a directory")
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
        """The block the harness injects into prompts: a heading and the fields as sorted, indented JSON."""
        head = f"Summary of {self.task}, written by {self.summary_model} from the RGB-only expert video:"
        return head + "\n" + json.dumps(self.fields, indent=2, sort_keys=True, ensure_ascii=False)


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
    raise ValueError(f"{name} is not valid JSON")


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
        other = self._owner(path)
        if other not in (None, model):
            raise SummaryError(
                f"{path} holds the summary of model {other!r}; model ids {other!r} and {model!r} map to the same "
                "file name, use a different summary root for one of them"
            )
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
        base = summary_task(task)
        path = self.path(model, task)
        if not path.is_file():
            return None
        try:
            record = json.loads(path.read_text(encoding="utf-8"), parse_constant=_reject_constant)
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


# ---------------------------------------------------------------------------------------------
# Evaluation modes


def parse_summary_mode(s: str) -> tuple[str, str | None]:
    """``own`` / ``none`` / ``shared:<model id>`` -> (kind, source model or None)."""
    if s in ("own", "none"):
        return s, None
    if isinstance(s, str) and s.startswith("shared:") and s[len("shared:") :].strip():
        return "shared", s[len("shared:") :].strip()
    raise ValueError(f"unknown summary mode {_show(s)}; allowed: {', '.join(MODES)}")


def resolve_summary(
    store: SummaryStore, mode: str | tuple[str, str | None], evaluated_model: str, task: str
) -> Summary | None:
    """The summary an episode of ``task`` uses. ``own``: the evaluated model's (None if it has not
    learned one yet; the caller runs the learning episode first). ``none``: None. ``shared:<m>``:
    m's summary, which must exist (a shared-summary control never silently falls back)."""
    kind, source = parse_summary_mode(mode) if isinstance(mode, str) else mode
    if kind == "none":
        return None
    if kind == "own":
        return store.load(evaluated_model, task)
    if kind != "shared" or not source:
        raise ValueError(f"unknown summary mode {_show(mode)}; allowed: {', '.join(MODES)}")
    found = store.load(source, task)
    if found is None:
        base = summary_task(task)
        raise SummaryError(
            f"summary mode shared:{source}: {store.path(source, task)} is missing (no summary of {base} by "
            f"{source}); create it by running the learning episode for {base} with model {source} and this "
            "summary root, or copy that file from the summary root where it was learned"
        )
    return found


__all__ = [
    "SUMMARY_FIELDS",
    "SUMMARY_FORMAT",
    "Summary",
    "SummaryError",
    "SummaryStore",
    "parse_summary_mode",
    "resolve_summary",
    "safe_model_id",
    "summary_task",
    "validate_summary",
]
