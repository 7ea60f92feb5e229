"""The schema of the summary a model writes from a demonstration (paper 3.3, C.8; reference notes
section 6) and its validation.

:func:`validate_summary` enforces the reference's fields plus size limits, so a summary cannot
smuggle a trajectory dump or bloat every prompt it is injected into, and for a composite task (the
basket track, learned from several atomic-skill demos) it cannot copy the learning scene's
inventory. Every problem is reported at once, so a model can fix them all in one repair turn.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from typing import Any

from vabench.core.errors import VabenchError

from .demo_tools import is_int as _is_int
from .demo_tools import show_value as _show
from .demo_tools import task_demos

SUMMARY_FORMAT = "vabench.summary.v1"
MAX_STRING_CHARS = 2000
MAX_LIST_ITEMS = 20
MAX_SUMMARY_BYTES = 16_000  # UTF-8 JSON of the validated fields


class SummaryError(VabenchError, ValueError):
    """A summary (or a stored summary file) is not acceptable; the message names the field or path."""


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
    out = _required(c, obj)
    out |= _optional(c, {k: v for k, v in obj.items() if v is not None}, composite)
    if composite:
        _no_inventory(c, out)
    if not c.errors:
        size = len(json.dumps(out, ensure_ascii=False).encode())
        if size > MAX_SUMMARY_BYTES:
            c.errors.append(f"the summary is {size} bytes of JSON; at most {MAX_SUMMARY_BYTES} allowed")
    if c.errors:
        raise SummaryError("invalid summary: " + "; ".join(c.errors))
    return out


def _required(c: _Checker, obj: dict) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in (*REQUIRED_TEXT, REQUIRED_LIST):
        if f not in obj:
            what = "a non-empty list of non-empty strings" if f == REQUIRED_LIST else "a non-empty string"
            c.errors.append(f"required field '{f}' is missing; it must be {what}")
    for f in REQUIRED_TEXT:
        if f in obj:
            out[f] = c.text(f, obj[f])
    if REQUIRED_LIST in obj:
        out[REQUIRED_LIST] = c.text_list(REQUIRED_LIST, obj[REQUIRED_LIST], min_items=1)
    return out


def _optional(c: _Checker, present: dict, composite: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
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
            out[f] = _text_or_list(c, f, present[f])
    if composite and "object_strategies" in present:
        out["object_strategies"] = _object_strategies(c, present["object_strategies"])
    return out


def _text_or_list(c: _Checker, f: str, v: Any):
    if isinstance(v, list):
        return c.text_list(f, v, min_items=1)
    if isinstance(v, str):
        return c.text(f, v)
    c.errors.append(f"field '{f}' must be a non-empty string or a list of non-empty strings; got {_show(v)}")
    return None


def _no_inventory(c: _Checker, out: dict) -> None:
    """A composite task's summary must not carry the learning scene's object counts or labels."""
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
