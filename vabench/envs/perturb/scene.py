"""The scene side of visual perturbations (:mod:`vabench.envs.perturb`): lighting, table and background
textures, object colours and distractors. Only render state is touched: lights, render materials
and visual-only entities (a render body and no PhysX component), so the physics of a perturbed
episode is the unperturbed one, step for step.

Colours the instruction names are kept: a task part whose hue is within :data:`HUE_GUARD_DEG` of
a colour word in the instruction ("the red cube", "the green target area") keeps its colour, and no
recoloured part or distractor takes such a hue, so the instruction never becomes ambiguous.
"""

from __future__ import annotations

import colorsys
import re

import numpy as np
import sapien

from vabench.core.registry import Registry
from vabench.core.vocab import Perturbation

HUE_OF_WORD = {"red": 0, "orange": 30, "yellow": 60, "green": 120, "cyan": 180, "blue": 220, "purple": 280, "pink": 330}
HUE_GUARD_DEG = 45.0  # a named colour's hue band: kept on its parts, never given to another
CHROMATIC_SATURATION = 0.35  # below: a grey or white part, which names no colour
LIGHT_GAIN = 0.30  # log-intensity swing per level (level 3: x0.41 .. x2.5)
LIGHT_TINT = 0.07  # warm/cool shift of the light colour per level
LIGHT_TURN_DEG = 25.0  # key-light azimuth swing per level
HUE_SHIFT_DEG = {1: (30, 60), 2: (60, 120), 3: (0, 360)}  # object recolouring per level
DISTRACTORS_PER_LEVEL = 2  # visual-only objects added per level (2, 4, 6)
DISTRACTOR_CLEARANCE = 0.12  # metres from any task body, and from each arm's straight path to it
TABLE_SPOTS_X, TABLE_SPOTS_Y = np.arange(-0.50, 0.51, 0.05), np.arange(-0.22, 0.29, 0.05)


def named_hues(instruction: str) -> list[float]:
    words = set(re.findall(r"[a-z]+", instruction.lower()))
    return [float(h) for w, h in HUE_OF_WORD.items() if w in words]


def _hue_gap(a: float, b: float) -> float:
    d = abs(a - b) % 360
    return min(d, 360 - d)


def _guarded(hue: float, guards: list[float]) -> bool:
    return any(_hue_gap(hue, g) < HUE_GUARD_DEG for g in guards)


def _hsv(rgb) -> tuple[float, float, float]:
    h, s, v = colorsys.rgb_to_hsv(*[float(c) for c in rgb[:3]])
    return h * 360, s, v


def _rgb(h: float, s: float, v: float) -> list[float]:
    return [*colorsys.hsv_to_rgb((h % 360) / 360, s, v), 1.0]


def _shapes(entity):
    body = entity.find_component_by_type(sapien.render.RenderBodyComponent)
    return [] if body is None else list(body.render_shapes)


def apply(world, kind: str, level: int, rng: np.random.Generator, instruction: str, arms) -> None:
    """Perturb ``world``'s look in place (a scene-side kind, ``SCENE_EFFECTS``; image kinds do nothing here)."""
    effect = SCENE_EFFECTS.get(kind)
    if effect is not None:
        effect(world, level, rng, instruction, arms)


def _signed(rng: np.random.Generator) -> float:
    """A swing of at least half the level's size, either way: each level is felt."""
    return float(rng.uniform(0.5, 1.0) * rng.choice((-1.0, 1.0)))


def _lighting(world, level: int, rng) -> None:
    scene = world.scene
    tint = np.array([1.0, 0.0, -1.0]) * LIGHT_TINT * level * _signed(rng)
    ambient = np.asarray(scene.ambient_light, dtype=float) * np.exp(LIGHT_GAIN * level * _signed(rng))
    scene.set_ambient_light(list(np.clip(ambient * (1 + tint), 0, 1)))
    light = world.key_light
    if light is None:
        return
    colour = np.asarray(light.color, dtype=float) * np.exp(LIGHT_GAIN * level * _signed(rng)) * (1 + tint)
    light.set_color(list(np.clip(colour, 0, 4)))
    turn = np.deg2rad(LIGHT_TURN_DEG * level * _signed(rng))
    q = [np.cos(turn / 2), 0.0, 0.0, np.sin(turn / 2)]
    light.entity.set_pose(sapien.Pose(q=q) * light.entity.pose)


def _texture(world, level: int, rng) -> None:
    """Level 1 recolours the table top, 2 also the wall and floor, 3 gives all three a pattern."""
    names = ["table"] if level == 1 else ["table", "wall", "ground"]
    for entity in world.scene.get_entities():
        if entity.name not in names:
            continue
        base = _rgb(rng.uniform(0, 360), rng.uniform(0.1, 0.6), rng.uniform(0.35, 0.9))
        for shape in _shapes(entity):
            shape.material.set_base_color(base)
            if level == 3:
                shape.material.set_base_color([1.0, 1.0, 1.0, 1.0])
                shape.material.set_base_color_texture(_pattern(rng, base))


def _pattern(rng, base) -> sapien.render.RenderTexture2D:
    """A checker, stripes or noise pattern around ``base``, as a repeating texture."""
    size, cells = 256, int(rng.integers(12, 33))  # a box's UVs pack its six faces: a face shows ~1/4 of it
    y, x = np.mgrid[0:size, 0:size] * cells // size
    style = rng.integers(3)
    mask = (x + y) % 2 if style == 0 else x % 2 if style == 1 else rng.integers(0, 2, (size, size))
    other = np.asarray(_rgb(rng.uniform(0, 360), rng.uniform(0.1, 0.6), rng.uniform(0.3, 0.9))[:3])
    img = np.where(mask[..., None] == 1, np.asarray(base[:3]), other)
    rgba = np.concatenate([img, np.ones((size, size, 1))], axis=2)
    return sapien.render.RenderTexture2D((rgba * 255).astype(np.uint8), "R8G8B8A8Unorm")


def _colour(world, level: int, rng, guards: list[float]) -> None:
    lo, hi = HUE_SHIFT_DEG[level]
    for body in world.bodies.values():
        shift = None  # one shift per body: its parts keep their contrasts
        for shape in _shapes(body.entity):
            h, s, v = _hsv(shape.material.base_color)
            if s < CHROMATIC_SATURATION or _guarded(h, guards):
                continue
            for _ in range(50):
                shift = shift if shift is not None else rng.uniform(lo, hi) * rng.choice((-1, 1))
                if not _guarded(h + shift, guards):
                    break
                shift = None
            if shift is not None:
                shape.material.set_base_color(_rgb(h + shift, s, v))


def _body_xy(world) -> list[tuple[np.ndarray, float]]:
    """(centre xy, footprint radius) of every task body, in the world frame."""
    out = []
    for body in world.bodies.values():
        m = body.matrix()
        radius = max(float(np.linalg.norm(p.p[:2])) + max(p.size) for p in body.spec.parts)
        out.append((m[:2, 3], radius))
    return out


def _segment_gap(p: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    ab = b - a
    t = np.clip(np.dot(p - a, ab) / max(np.dot(ab, ab), 1e-9), 0.0, 1.0)
    return float(np.linalg.norm(p - (a + t * ab)))


def free_spots(world, arms) -> list[np.ndarray]:
    """Table spots at least DISTRACTOR_CLEARANCE from every task body's footprint and from the
    straight line between each controlled arm's base and each body (where the arm reaches), and
    clear of each controlled arm's home gripper position."""
    from vabench.envs.sim.robot import BASE_X, BASE_Y

    bases = [np.array([BASE_X[a], BASE_Y]) for a in arms]
    bodies = _body_xy(world) + [(world.arms[a].gc()[:2], 0.06) for a in arms]  # the gripper at home
    spots = []
    for x in TABLE_SPOTS_X:
        for y in TABLE_SPOTS_Y:
            p = np.array([x, y])
            if any(np.linalg.norm(p - c) < r + DISTRACTOR_CLEARANCE for c, r in bodies):
                continue
            if any(_segment_gap(p, base, c) < DISTRACTOR_CLEARANCE for base in bases for c, _ in bodies):
                continue
            spots.append(p)
    return spots


def _distractors(world, level: int, rng, guards: list[float], arms) -> None:
    from vabench.envs.sim.scene import TABLE_TOP_Z

    taken = [
        _hsv(shape.material.base_color)[0] for b in world.bodies.values() for shape in _shapes(b.entity)
    ]  # a distractor never looks like a task object either
    spots = free_spots(world, arms)
    order = rng.permutation(len(spots))
    placed: list[np.ndarray] = []
    for i in order:
        if len(placed) == DISTRACTORS_PER_LEVEL * level:
            break
        p = spots[i]
        if any(np.linalg.norm(p - q) < 0.09 for q in placed):
            continue
        hue = next((h for h in rng.uniform(0, 360, 50) if not _guarded(h, guards + taken)), None)
        if hue is None:
            return
        material = sapien.render.RenderMaterial(base_color=_rgb(hue, rng.uniform(0.4, 0.9), rng.uniform(0.4, 0.9)))
        shape, half_h = _distractor_shape(rng, material)
        body = sapien.render.RenderBodyComponent()
        body.attach(shape)
        entity = sapien.Entity()
        entity.set_name(f"distractor{len(placed)}")
        entity.add_component(body)
        yaw = rng.uniform(0, np.pi)
        entity.set_pose(sapien.Pose([p[0], p[1], TABLE_TOP_Z + half_h], [np.cos(yaw / 2), 0, 0, np.sin(yaw / 2)]))
        world.scene.add_entity(entity)
        placed.append(p)


def _distractor_shape(rng, material):
    """A box, a standing cylinder or a ball, 2.5-5 cm across; (shape, half height)."""
    kind, r = rng.integers(3), float(rng.uniform(0.0125, 0.025))
    if kind == 0:
        half = [r, float(rng.uniform(0.6, 1.4)) * r, float(rng.uniform(0.6, 1.6)) * r]
        return sapien.render.RenderShapeBox(half, material), half[2]
    if kind == 1:
        h = float(rng.uniform(0.8, 2.0)) * r
        shape = sapien.render.RenderShapeCylinder(r, h, material)  # axis along local x: stand it up
        shape.set_local_pose(sapien.Pose(q=[np.cos(-np.pi / 4), 0.0, np.sin(-np.pi / 4), 0.0]))
        return shape, h
    return sapien.render.RenderShapeSphere(r, material), r


# The scene-side kinds: (world, level, the episode's perturbation generator, the instruction, the task's arms) ->
# None, changing render state only. The image-side kinds are vabench.envs.perturb.config.IMAGE_EFFECTS.
SCENE_EFFECTS: Registry = Registry(
    "scene perturbation",
    (
        (Perturbation.LIGHTING, lambda world, level, rng, instruction, arms: _lighting(world, level, rng)),
        (Perturbation.TEXTURE, lambda world, level, rng, instruction, arms: _texture(world, level, rng)),
        (
            Perturbation.COLOUR,
            lambda world, level, rng, instruction, arms: _colour(world, level, rng, named_hues(instruction)),
        ),
        (
            Perturbation.DISTRACTORS,
            lambda world, level, rng, instruction, arms: _distractors(world, level, rng, named_hues(instruction), arms),
        ),
    ),
)
