"""Each expert summary (``summary=expert``; issue 27) says what its task's demonstration does.

The stored demo keeps frames only, so each demonstration is replayed without a camera
(:func:`vabench.envs.demo_recorder.trace`: the expert on the demo seed, the same physics the frames show)
and each claim a summary makes in words is held to the trace: which body the first close takes,
the bodies it says never to touch, how the gripper approaches, how far it lifts ("about N cm"),
whether and where it lets go, which arms act, in which order and together, and whether a summary
that says "no lift" moves nothing. A rule reads a phrase only where the summary says it, so a
summary that says something else is held to that instead, and one that contradicts its demo fails.
"""

from __future__ import annotations

import re
from functools import cache

import pytest

from vabench.agents.summaries.expert_summaries import EXPERT
from vabench.envs.demo_recorder import DemoTrace, trace

LIFT_TOL_M = 0.02  # "about N cm": within 2 cm or a quarter of N
SET_DOWN_M = 0.03  # "lower it until it rests on / just above": the body drops at most this when let go
STILL_M = 0.005  # "the other arm stays still": its grasp centre moves less than this


@cache
def _trace(task: str) -> DemoTrace:
    return trace(task)


def _text(fields: dict, *keys: str) -> str:
    parts = [fields.get(k) or "" for k in keys]
    return " ".join(" ".join(p) if isinstance(p, list) else str(p) for p in parts)


AFTER_CLOSE = ("test_lift_rule", "task_stage", "post_grasp_goal", "release_or_completion_rule", "coordination_sequence")


def _moves(step, arm: str) -> list[tuple[str, str]]:
    """(axis, sign) of what ``step``'s action moves ``arm`` along (empty: it does not move it)."""
    a = step.action
    if a.get("action") == "gripper.move_world" and a.get("arm", arm) == arm:
        return [(a["axis"], a["sign"])]
    if a.get("action") == "dual_gripper.move_world" and arm in a:
        return [(a[arm]["axis"], a[arm]["sign"])]
    return []


def _named(text: str, bodies) -> list[str]:
    return [b for b in bodies if b.replace("_", " ") in text.lower()]


def disagreements(fields: dict, t: DemoTrace) -> list[str]:
    """Every claim of the summary ``fields`` that the demonstration ``t`` contradicts, in words."""
    out = [] if t.success else ["the demonstration does not succeed"]
    grips = t.grips()
    closes = [g for g in grips if g[2] == "close"]
    if not closes:
        return [*out, "the demo never closes a gripper"]
    first, arm = closes[0], closes[0][1]
    part, approach = fields["grasp_object_part"], fields["approach_strategy"]
    after = _text(fields, *AFTER_CLOSE)
    if "close the gripper first" in approach.lower():  # a press: closed before it moves, on nothing
        if first[3] or any(_moves(s, arm) for s in t.steps[: first[0]]):
            out.append(f"says close first; the demo closes at step {first[0]} holding {first[3]}")
        if not _named(part, t.touched[arm]):
            out.append(f"says it works on {part!r}; the fingers touch {sorted(t.touched[arm])}")
    elif not first[3] or set(first[3]) - set(_named(part, first[3])):
        out.append(f"says it takes {part!r}; the first close holds {first[3]}")
    for phrase in re.findall(r"never the ([a-z ]+)", _text(fields, "grasp_object_part", "functional_constraints")):
        others = [b for b in t.bodies if b.split("_")[-1] == phrase.split()[-1] and b not in first[3]]
        touched = [b for b in others if any(b in seen for seen in t.touched.values())]
        if not others or touched:
            out.append(f"says never the {phrase}; bodies it can mean {others}, touched {touched}")
    reach = next((i for i, s in enumerate(t.steps) if _named(part, s.holds[arm])), first[0])  # first touch of the part
    last = [m for s in t.steps[: reach + 1] for m in _moves(s, arm)][-1:]
    if "descend" in approach and last != [("z", "-")]:
        out.append(f"says it descends onto the part; the last move before touching it is {last}")
    if "inward" in approach and (not last or last[0][0] == "z"):
        out.append(f"says it moves inward onto the part; the last move before touching it is {last}")
    want_arms = int(fields.get("required_arms", 1))
    if len({g[1] for g in closes}) != want_arms:
        out.append(f"says {want_arms} arm(s); arms that close in the demo: {sorted({g[1] for g in closes})}")
    out += _lift(after, t, first)
    out += _release(fields, after, t, grips)
    out += _arms(fields, t, closes, grips)
    return out


def _lift(after: str, t: DemoTrace, first) -> list[str]:
    """Each "lift ... about N cm" against the held body's lift over the moves up right after the close;
    "no lift" against every body's peak lift."""
    i, arm = first[0] + 1, first[1]
    while i < len(t.steps) and _moves(t.steps[i], arm) == [("z", "+")]:
        i += 1
    held = first[3][0] if first[3] else None
    lifted = t.steps[i - 1].lift[held] if held in t.start.lift else 0.0
    out = []
    for n in re.findall(r"[Ll]ifts?\b[^.;]*?about (\d+) cm", after):
        if abs(lifted - int(n) / 100) > max(LIFT_TOL_M, int(n) / 400):
            out.append(f"says it lifts about {n} cm; the demo lifts {100 * lifted:.1f} cm after the close")
    if after.lower().startswith("no lift") and max(t.peak_lift.values(), default=0.0) > 0.01:
        out.append(f"says no lift; peak lifts {t.peak_lift}")
    return out


def _release(fields: dict, after: str, t: DemoTrace, grips) -> list[str]:
    """Whether it lets go ("open"), whether everything ends open, and the set-down ("lower ... open")."""
    opens = [g for g in grips if g[2] == "open"]
    out = []
    if bool(re.search(r"\bopen", after)) != bool(opens):
        out.append(f"says {'it opens' if not opens else 'nothing of opening'}; the demo's opens: {opens}")
    if re.search(r"grippers? open", fields.get("post_grasp_goal", "")) and any(t.end.closed.values()):
        out.append(f"says it ends with the gripper open; at the end closed: {t.end.closed}")
    if opens and "lower" in after:
        i, arm = opens[-1][0], opens[-1][1]
        held = [b for b in t.steps[i - 1].holds[arm] if b in t.start.lift]
        for b in held:
            drop = t.steps[i - 1].lift[b] - t.end.lift[b]
            if drop > SET_DOWN_M:
                out.append(f"says it lowers before letting go; {b} drops {100 * drop:.1f} cm when released")
    return out


def _arms(fields: dict, t: DemoTrace, closes, grips) -> list[str]:
    """Which arm acts (its side), the other arm still, the handover order, closing together."""
    out = []
    side = re.search(r"arm on the (\w+)'s side", fields.get("arm_assignment", ""))
    if side:
        x = t.start.at[side[1]][0]
        if closes[0][1] != ("left" if x < 0 else "right"):
            out.append(
                f"says the arm on the {side[1]}'s side acts first; {closes[0][1]} does, the {side[1]} at x={x:.2f}"
            )
    if "stays still" in fields.get("arm_assignment", ""):
        for arm in set(t.arms) - {g[1] for g in grips}:
            travel = max(
                sum((a - b) ** 2 for a, b in zip(s.gc[arm], t.start.gc[arm], strict=True)) ** 0.5 for s in t.steps
            )
            if travel > STILL_M:
                out.append(f"says the other arm stays still; {arm} moves {100 * travel:.1f} cm")
    if "only after" in fields.get("release_or_completion_rule", ""):
        giver = closes[0][1]
        opened = [i for i, a, kind, _ in grips if a == giver and kind == "open"]
        taken = [i for i, a, _, _ in closes if a != giver]
        if not opened or not taken or opened[0] <= taken[0]:
            out.append(f"says the giver opens only after the receiver has closed; grips {grips}")
    synced = _text(fields, "synchronized_actions")
    if "close both grippers together" in synced and len({g[0] for g in closes}) != 1:
        out.append(f"says both close together; closes at steps {[g[0] for g in closes]}")
    if "equal moves" in synced:
        lift = t.steps[closes[-1][0] + 1].action
        if lift.get("action") != "dual_gripper.move_world" or lift.get("left") != lift.get("right"):
            out.append(f"says both arms lift with equal moves; after the close: {lift}")
    return out


@pytest.mark.parametrize("task", sorted(EXPERT))
def test_the_expert_summary_says_what_its_demonstration_does(task):
    assert disagreements(EXPERT[task], _trace(task)) == []


def test_a_summary_that_contradicts_the_demonstration_is_caught():
    place, press = _trace("place_single_cube"), _trace("click_bell_right")
    grasp_only = disagreements(EXPERT["grasp_single_cube"], place)  # it lets go; the grasp summary never says so
    assert [d for d in grasp_only if d.startswith("says nothing of opening")]
    lifted = {**EXPERT["grasp_single_cube"], "test_lift_rule": "After closing, lift straight up by about 25 cm."}
    assert [d for d in disagreements(lifted, _trace("grasp_single_cube")) if "about 25 cm" in d]
    assert [d for d in disagreements(EXPERT["grasp_single_cube"], press) if "first close holds ()" in d]
    wrong_arms = {**EXPERT["lift_pot"], "required_arms": 1}
    assert [d for d in disagreements(wrong_arms, _trace("lift_pot")) if d.startswith("says 1 arm")]
