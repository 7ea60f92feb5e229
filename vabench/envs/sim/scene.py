"""The physical world of one episode: a SAPIEN scene with RoboTwin's table frame, a wall, lights
with shadows, two Panda arms on pedestals and the task's bodies.

A new World is built for every reset. PhysX is deterministic for an identical sequence of
scene construction and steps, so rebuilding from scratch is what makes ``reset(task, seed)``
bitwise repeatable, also in a fresh process. Building costs ~50 ms; the expensive part of a
new scene, the shader compile (~3.5 s on lavapipe), is paid once per process thanks to an
anchor scene with a camera that lives as long as the process.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import sapien

from vabench.core.vocab import Robot

from .bodies import BodySpec, Part
from .embodiments import embodiment, robot_files
from .robot import ARMS, BASE_X, BASE_Y, Arm, pedestal_half
from .shaders import shader_dir

TIMESTEP = 1.0 / 250.0
TABLE_TOP_Z = 0.74
TABLE_HALF = (0.60, 0.35, 0.025)
TABLE_LEG_HALF = (0.025, 0.025, (TABLE_TOP_Z - 2 * TABLE_HALF[2]) / 2)
WALL_CENTER, WALL_HALF = (0.0, 1.0, 1.5), (3.0, 0.6, 1.5)  # front face at y = 0.4
DEFAULT_FRICTION = 0.5
TOUCH_SEPARATION_M = 0.002

TABLE_COLOR = (0.82, 0.72, 0.58)
LEG_COLOR = (0.35, 0.35, 0.37)
WALL_COLOR = (0.93, 0.88, 0.86)
FLOOR_COLOR = (0.55, 0.56, 0.58)
PEDESTAL_COLOR = (0.22, 0.23, 0.25)

_process_ready = False
_anchors: dict[str, tuple] = {}
G_BUFFER_FORMATS = {
    "Color": "r8g8b8a8unorm",
    "Albedo": "r8g8b8a8unorm",
    "Specular": "r8g8b8a8unorm",
    "Normal": "r16g16b16a16sfloat",
}


def _process_setup() -> None:
    """Global SAPIEN settings that must precede any shape or camera."""
    global _process_ready
    if not _process_ready:
        # SAPIEN 3 reads the default material only when a shape is created.
        sapien.physx.set_default_material(DEFAULT_FRICTION, DEFAULT_FRICTION, 0.0)
        # 8-bit colour read-back: identical pixels to float32 + conversion, ~12 ms cheaper at 640x480.
        # Narrow G-buffer targets (lavapipe's per-pixel cost is memory traffic): within 1/255 of float32.
        for name, fmt in G_BUFFER_FORMATS.items():
            sapien.render.set_picture_format(name, fmt)
        _process_ready = True


def add_camera(
    scene: sapien.Scene, name: str, width: int, height: int, fovy: float, near: float, far: float, shader: str
):
    """A camera with the named shader. The first one per shader also creates an anchor scene that
    lives as long as the process, so the shader compile (~3.5 s) is paid once, not per episode."""
    directory = shader_dir(shader)
    if shader not in _anchors:
        sapien.render.set_camera_shader_dir(directory)
        anchor = sapien.Scene()
        cam = anchor.add_camera("anchor", 8, 8, 1.0, 0.01, 10.0)
        anchor.update_render()
        cam.take_picture()
        _anchors[shader] = (anchor, cam)
    sapien.render.set_camera_shader_dir(directory)
    return scene.add_camera(name, width, height, fovy, near, far)


def _touches(contact) -> bool:
    return any(p.separation < TOUCH_SEPARATION_M for p in contact.points)


@dataclass(frozen=True)
class Body:
    """A task body in the scene. Its pose is privileged; read it only through the evaluator."""

    name: str
    spec: BodySpec
    entity: sapien.Entity

    @property
    def static(self) -> bool:
        return self.spec.static

    def matrix(self) -> np.ndarray:
        return self.entity.pose.to_transformation_matrix()

    @property
    def component(self):
        return self.entity.find_component_by_type(sapien.physx.PhysxRigidBaseComponent)


def _sapien_local_pose(part: Part) -> sapien.Pose:
    pose = sapien.Pose(list(part.p), list(part.q))
    if part.kind in ("cylinder", "capsule"):  # SAPIEN's axis is local x, ours is local z
        pose = pose * sapien.Pose(q=[np.cos(-np.pi / 4), 0.0, np.sin(-np.pi / 4), 0.0])
    return pose


def _render_material(color) -> sapien.render.RenderMaterial:
    return sapien.render.RenderMaterial(base_color=[*color, 1.0], roughness=0.7, metallic=0.0)


class World:
    """One episode's scene. ``arms`` maps arm name to :class:`Arm`; ``bodies`` the task bodies."""

    def __init__(self, render: bool = True, robot: str = Robot.PANDA, compensate: bool = True):
        """``compensate``: cancel gravity on the arms from Python before every step (the paper's
        commands, as always); False: the arms' links feel no gravity (control=ee_delta)."""
        _process_setup()
        self.scene = sapien.Scene()
        self.scene.set_timestep(TIMESTEP)
        self.step_count = 0
        self.step_hooks: list[Callable[[int], None]] = []
        self.bodies: dict[str, Body] = {}
        self.fixtures: dict[str, tuple[BodySpec, np.ndarray]] = {}  # name -> (spec, 4x4 pose)
        self.key_light = None  # the shadow-casting light (visual perturbations turn it)
        body = embodiment(robot)
        self._build_fixtures(body.base_z, body.seat)
        if render:
            self._build_lights()
        urdf = str(robot_files(body).urdf)
        self.arms = {name: Arm(self.scene, urdf, name, i + 1, body) for i, name in enumerate(ARMS)}
        for arm in self.arms.values() if not compensate else ():
            arm.without_gravity()

    # -- construction ------------------------------------------------------------------
    def _static_box(self, name: str, center, half, color) -> None:
        spec = BodySpec(name, (Part("box", tuple(half), color=color),), mass=None, friction=DEFAULT_FRICTION)
        self._build(spec, sapien.Pose(list(center)))
        pose = np.eye(4)
        pose[:3, 3] = center
        self.fixtures[name] = (spec, pose)

    def _build_fixtures(self, base_z: float, seat: float) -> None:
        ground = self.scene.create_actor_builder()
        ground.add_plane_collision(sapien.Pose(q=[np.cos(-np.pi / 4), 0, np.sin(-np.pi / 4), 0]))
        ground.add_box_visual(sapien.Pose([0, 0, -0.005]), [4.0, 4.0, 0.005], _render_material(FLOOR_COLOR))
        ground.set_physx_body_type("static")
        ground.build("ground")
        top_z = TABLE_TOP_Z - TABLE_HALF[2]
        self._static_box("table", (0.0, 0.0, top_z), TABLE_HALF, TABLE_COLOR)
        lx, ly = TABLE_HALF[0] - 0.05, TABLE_HALF[1] - 0.05
        for i, (sx, sy) in enumerate(((1, 1), (1, -1), (-1, 1), (-1, -1))):
            self._static_box(f"table_leg{i}", (sx * lx, sy * ly, TABLE_LEG_HALF[2]), TABLE_LEG_HALF, LEG_COLOR)
        self._static_box("wall", WALL_CENTER, WALL_HALF, WALL_COLOR)
        half = pedestal_half(base_z)
        for arm in ARMS:
            self._static_box(f"{arm}_pedestal", (BASE_X[arm], BASE_Y, half[2] - seat), half, PEDESTAL_COLOR)

    def _build_lights(self) -> None:
        # Ambient plus one shadow-casting key light: the shadows are the model's height cue.
        # A 1024^2 map over a 3 m square is ~3 mm per texel: crisp enough, and on lavapipe
        # the shadow pass is the largest part of a frame's cost.
        self.scene.set_ambient_light([0.42, 0.42, 0.42])
        self.key_light = self.scene.add_directional_light(
            [0.25, 0.45, -1.0],
            [0.8, 0.8, 0.77],
            shadow=True,
            position=[0, 0, 0],
            shadow_scale=1.5,
            shadow_map_size=1024,
            shadow_near=-3.0,
            shadow_far=3.0,
        )

    def _build(self, spec: BodySpec, pose: sapien.Pose) -> sapien.Entity:
        builder = self.scene.create_actor_builder()
        material = sapien.physx.PhysxMaterial(spec.friction, spec.friction, spec.restitution)
        volume = sum(p.volume() for p in spec.parts)
        density = 1000.0 if spec.mass is None else spec.mass / volume
        for part in spec.parts:
            lp = _sapien_local_pose(part)
            rm = _render_material(part.color)
            if part.kind == "box":
                builder.add_box_collision(lp, list(part.size), material=material, density=density)
                builder.add_box_visual(lp, list(part.size), material=rm)
            elif part.kind == "sphere":
                builder.add_sphere_collision(lp, part.size[0], material=material, density=density)
                builder.add_sphere_visual(lp, part.size[0], material=rm)
            elif part.kind == "cylinder":
                r, h = part.size
                builder.add_cylinder_collision(lp, r, h, material=material, density=density)
                builder.add_cylinder_visual(lp, r, h, material=rm)
            elif part.kind == "capsule":
                r, h = part.size
                builder.add_capsule_collision(lp, r, h, material=material, density=density)
                builder.add_capsule_visual(lp, r, h, material=rm)
            else:
                raise ValueError(f"unknown part kind {part.kind!r} in body {spec.name!r}")
        builder.set_physx_body_type("static" if spec.static else "dynamic")
        entity = builder.build(spec.name)
        entity.set_pose(pose)
        return entity

    def add(self, spec: BodySpec, position, quat_wxyz=(1.0, 0.0, 0.0, 0.0)) -> Body:
        if spec.name in self.bodies or spec.name in self.fixtures:
            raise ValueError(f"duplicate body name {spec.name!r}")
        body = Body(spec.name, spec, self._build(spec, sapien.Pose(list(position), list(quat_wxyz))))
        self.bodies[spec.name] = body
        return body

    def fixture_obstacles(self) -> list[tuple[str, BodySpec, np.ndarray]]:
        """Static fixtures for the planner: (name, spec, 4x4 pose)."""
        return [(name, spec, pose) for name, (spec, pose) in self.fixtures.items()]

    # -- simulation --------------------------------------------------------------------
    def step(self, n: int = 1) -> None:
        for _ in range(n):
            for arm in self.arms.values():
                if arm.compensated:
                    arm.apply_gravity_compensation()
            self.scene.step()
            self.step_count += 1
            for hook in self.step_hooks:
                hook(self.step_count)

    def finger_contacts(self, arm: str) -> list[tuple[int, str]]:
        """(finger index 0/1, body name) for every task body touching one of ``arm``'s finger
        links, i.e. with a contact point closer than TOUCH_SEPARATION_M (PhysX also reports
        pairs that are merely within its contact offset)."""
        fingers = [f.entity for f in self.arms[arm].fingers]
        names = {b.entity: name for name, b in self.bodies.items()}
        out = []
        for c in self.scene.get_contacts():
            a, b = c.bodies[0].entity, c.bodies[1].entity
            for i, finger in enumerate(fingers):
                other = b if a is finger else a if b is finger else None
                if other in names and _touches(c):
                    out.append((i, names[other]))
        return out

    def touching(self, a: set, b: set) -> bool:
        """True if an entity of ``a`` touches an entity of ``b``."""
        for c in self.scene.get_contacts():
            x, y = c.bodies[0].entity, c.bodies[1].entity
            if ((x in a and y in b) or (x in b and y in a)) and _touches(c):
                return True
        return False

    def close(self) -> None:
        self.step_hooks.clear()
        self.bodies.clear()
        self.arms.clear()
        self.scene = None
