"""The servo agent behind the agent boundary (``model=servo``): a non-privileged offline agent that
decides only from what an observation shows a model (its images, the robot state, the two feedback
booleans) and its own earlier decisions, answering with the paper's commands.

It is a reference for "solvable from the model's own observations": classic image processing, an
image Jacobian measured with its own probe moves, no learned weights, no simulator, no calibration.
"""

from __future__ import annotations

from vabench.agents.chat.model import ModelError
from vabench.core.boundary import Agent, Answer, Brief, Observation, answer_of
from vabench.core.vocab import ACTIVE, RIGHT

from .basket import basket
from .depth import TOOL, plan_depth
from .dual import Pair, lift_pot
from .handover import plan_handover
from .perception import Seen, goal_from_instruction, seen_of
from .shoe import plan_shoe
from .skills import Servo, Skill
from .tool import hammer

GIVE_UP = "servo: the target is not visible any more"
NO_PASSIVE_PAIR = "servo: its two-arm skills measure in the view between the grippers (active protocol only)"
# the two-arm tasks it has a skill for (tasks=all leaves the others out)
TWO_ARM_SKILLS = ("lift_pot", "handover_horizontal_block", "place_shoe")


def plan(s: Servo) -> Skill:
    """The whole episode: point down, calibrate on the target, square up, align, grasp (or press),
    and for a placement carry over the destination and release; retry while budget lasts."""
    g = s.goal
    yield from s.point_down()
    m, blob = yield from s.calibrate(g.target)
    if g.destination:
        s.glance(g.destination, 60)
    for attempt in range(4):
        if attempt:
            yield from s.grip(False)
            yield from s.move_z_to(s.z_cal)
            m, blob = yield from s.seek(g.target)
            if s.active and blob is not None:
                s.top_blob = blob
        if m is None:
            return GIVE_UP
        if g.kind != "press":
            yield from s.yaw_to(
                s.top_blob if s.active or attempt == 0 else None, across_long=g.shape == "long", avoid=g.destination
            )
        yield from s.align(g.target, m, blob)
        if not (yield from s.take()):
            continue
        m, blob = yield from s.seek(g.destination, 60, recall=True)
        if m is None:
            s.notes.append("destination not seen")
            continue
        yield from s.move_z_to(s.release_z() + 0.08)  # carry low: the arm reaches farther
        yield from s.align(g.destination, m, blob, tries=1)
        if s.z_floor is None:  # the grasp never met the table: lower until the load touches down
            yield from s.lower_to(float(s.gc[2]) - 0.6)
        else:
            yield from s.lower_to(s.release_z())
        yield from s.grip(False)
        yield from s.move("z", 0.05)
        yield from s.move_z_to(s.z_cal)
        m, blob = yield from s.measure(g.target)
    return "servo: attempts exhausted"


def gives_up(why: str) -> Skill:
    """A plan that stops at once, saying why."""
    return why
    yield


class ServoAgent(Agent):
    privileged = False
    plays_commands = True  # its skills measure with paper commands (probe moves): control=ee_delta is refused

    def __init__(self, name: str = "servo"):
        self.name = name
        self.protocol = ACTIVE.name
        self._plan: Skill | None = None
        self._servo: Servo | None = None
        self.tools: tuple[str, ...] = ()

    def refuses(self, task: str, arms: tuple[str, ...], seed: int, protocol: str) -> str | None:
        """The two-arm tasks it has no skill for."""
        if len(arms) > 1 and task not in TWO_ARM_SKILLS:
            return f"servo has no two-arm skill for {task} ({', '.join(arms)}): leave it out of tasks="
        return None

    def start(self, brief: Brief) -> None:
        why = self.refuses(brief.task, brief.arms, brief.seed, brief.protocol)
        if why:
            raise ModelError(why, permanent=True)
        self.protocol, self.arms, self.tools = brief.protocol, brief.arms, brief.tools
        self._plan, self._servo = None, None

    def _start(self, seen: Seen) -> dict:
        """The plan for the instruction's goal. Single-arm placing and grasping is measured by depth
        when the episode offers the depth_point tool, else by the image Jacobian of its own probe
        moves; the two-arm skills (pot, handover, shoe) measure in the view centred between the grippers
        (active only)."""
        goal = goal_from_instruction(seen.instruction)
        two = {"pot": lift_pot, "handover": plan_handover, "shoe": plan_shoe}.get(goal.kind)
        if two is not None:
            active = self.protocol == ACTIVE.name
            self._plan = two(Pair(seen, goal)) if active else gives_up(NO_PASSIVE_PAIR)
            return next(self._plan)
        arm = RIGHT if RIGHT in seen.arms else next(iter(seen.arms))
        self._servo = Servo(seen, goal, self.protocol == ACTIVE.name, arm)
        default = plan_depth if TOOL in self.tools else plan
        self._plan = {"basket": basket, "strike": hammer}.get(goal.kind, default)(self._servo)
        return next(self._plan)

    def act(self, obs: Observation) -> Answer:
        seen = seen_of(obs)
        try:
            decision = self._start(seen) if self._plan is None else self._plan.send(seen)
        except StopIteration as end:
            decision = {"stop": True, "reason": str(end.value or "servo: plan finished")}
        return answer_of(decision)
