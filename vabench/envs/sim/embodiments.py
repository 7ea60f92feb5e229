"""Embodiments (``robot=NAME``): the paper's Panda, and arms from the ``example-robot-data`` package
carrying the Panda hand, so the gripper, its TCP, the finger pads, the GC and the gripper-local
axes are the same on every robot and the action protocol and the proprioception mean the same.

Why these arms: ``example-robot-data`` (already the Panda's source) ships complete URDF + SRDF
descriptions of two common table-top manipulators with a flange and no gripper of their own, the
UFactory xArm7 (7 DoF, a redundant arm like the Panda, shorter reach) and the Universal Robots UR5
(6 DoF, no redundancy: IK has finitely many solutions, so reach and detours differ most). Its other
arms either carry their own hands with other kinematics (Kinova Jaco, TIAGo, PR2), are whole
humanoids (Baxter, Talos) or are too small for the tables (SO-100, Z1).

A composite description is generated into the cache (never committed), like the Panda's: the arm's
links and joints (world links, transmissions and plugins dropped), its meshes (visuals decimated,
collision hulls for mplib), the Panda hand's links and joints from the cached Panda mounted on the
arm's flange, and an SRDF with the arm's and the hand's disabled pairs plus the mount's.

Each arm stands where the Panda does, on a higher pedestal (``base_z``: from the Panda's, the
xArm7's shorter reach and the UR5's wrist offsets cannot turn the hand top-down at the home pose).
The xArm7's is 8 cm higher. The UR5's puts its shoulder 15 cm above the table top: lower (0.45 m,
shoulder 0.2 m below the top, 0.11 m behind the table's edge) its upper arm met the table edge
whenever the TCP came within about 10 cm of the table near the robot (measured: the collision is
``upper_arm_link`` with the table; 0 of 10 candidates of the bell, the hammer and the upright
bottle; at 0.80 m, with the home re-solved, the same seeds pass).
``home`` puts the TCP at the Panda's home pose (the same world pose, found once by least-squares IK
over collision-free solutions and written here; the UR5's home GC is 0.10 m further forward, where
its wrist offsets admit it); ``park`` turns the arm outward, off the table.
"""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from vabench.core.registry import Registry
from vabench.core.vocab import Robot

from . import assets

HAND_LINKS = ("panda_hand", "panda_leftfinger", "panda_rightfinger", "panda_hand_tcp")
HAND_JOINTS = ("panda_hand_tcp_joint", "panda_finger_joint1", "panda_finger_joint2")
ASSET_VERSION = "v1"  # bump when a composite's generated files change


@dataclass(frozen=True)
class Embodiment:
    """One robot: where its description comes from and what the env needs to drive it."""

    name: str
    dof: int
    home: tuple[float, ...]  # GC 0.32 m above the table, 0.26 m in front of the base, as the Panda's
    park: tuple[float, ...]  # folded beside the pedestal, out of the workspace and the views
    force_limit: tuple[float, ...]  # per arm joint, N m (URDF effort x2, as the Panda's)
    wrist: int  # index of the last arm joint (about the gripper's approach axis)
    package: str = ""  # example-robot-data description folder ("" = the Panda's own builder)
    urdf: str = ""
    srdf: str = ""
    flange: str = ""  # the arm link the hand is mounted on
    mount_yaw: float = 0.0  # the hand's turn about the flange axis (rad)
    base_z: float = 0.37  # the base's height on its pedestal (world; the table top is at 0.74)
    seat: float = 0.002  # the pedestal's top is this far below the base (the UR5's base mesh dips 3 mm)
    home_reach: float = 0.26  # the home GC's distance in front of the base (m)
    omit: tuple[str, ...] = ()  # links (and the joints to them) dropped: a stub the hand would overlap


PANDA = Embodiment(
    Robot.PANDA,
    7,
    home=(0.0, -1.4909, 0.0, -2.8495, 0.0, 2.9294, 0.7853),
    park=(1.5708, -1.7000, 0.0, -2.9500, 0.0, 1.4000, 0.7853),
    force_limit=(174.0, 174.0, 174.0, 174.0, 24.0, 24.0, 24.0),
    wrist=6,
)
XARM7 = Embodiment(
    Robot.XARM7,
    7,
    home=(-0.0547, -1.2796, 0.0579, 0.4604, 0.2254, 0.1709, -0.1668),
    park=(1.5161, -1.2796, 0.0579, 0.4604, 0.2254, 0.1709, -0.1668),
    force_limit=(100.0, 100.0, 60.0, 60.0, 60.0, 40.0, 40.0),
    wrist=6,
    base_z=0.45,  # its 0.7 m reach cannot hold the hand top-down at the Panda's home from 0.37
    package="xarm_description",
    urdf="urdf/xarm7.urdf",
    srdf="srdf/xarm7.srdf",
    flange="link_eef",
)
UR5 = Embodiment(
    Robot.UR5,
    6,
    home=(-2.4649, -0.9471, -2.3986, -2.9374, -0.8941, -4.7125),  # GC 0.36 m in front: see home_reach
    park=(-0.8941, -0.9471, -2.3986, -2.9374, -0.8941, -4.7125),
    force_limit=(300.0, 300.0, 300.0, 56.0, 56.0, 56.0),
    wrist=5,
    package="ur_description",
    urdf="urdf/ur5_robot.urdf",
    srdf="srdf/ur5.srdf",
    flange="tool0",
    base_z=0.80,  # shoulder above the table top: from 0.45 its upper arm met the table edge on descents
    seat=0.005,
    home_reach=0.36,  # at 0.26 m its wrist offsets leave no exact IK for the Panda's home pose
    omit=("ee_link",),  # a 1 cm collision cube at the flange, where the hand sits
)
EMBODIMENTS: Registry[Embodiment] = Registry("robot", ((e.name, e) for e in (PANDA, XARM7, UR5)), "robot=NAME")


def embodiment(name: str | Embodiment) -> Embodiment:
    """The robot called ``name``; UnknownName (a ValueError) names the allowed values."""
    return name if isinstance(name, Embodiment) else EMBODIMENTS[name]


def robot_files(name: str | Embodiment) -> assets.RobotFiles:
    """The cached description of a robot, built on first use."""
    body = embodiment(name)
    if body.name == Robot.PANDA:
        return assets.panda_files()
    return build_composite(body, assets.cache_dir())


def _source() -> Path:
    return assets._panda_source().parent


def _mesh_rel(filename: str, package: str) -> str:
    prefix = f"package://example-robot-data/robots/{package}/"
    if not filename.startswith(prefix):
        raise RuntimeError(f"unexpected mesh URI {filename!r} in {package}")
    return filename[len(prefix) :]


def _arm_tree(body: Embodiment, src: Path, out: Path) -> tuple[ET.Element, int]:
    """The arm's links and joints with its meshes copied under ``out/meshes/arm``; (robot, triangles)."""
    root = ET.parse(src / body.urdf).getroot()
    robot = ET.Element("robot", name=f"{body.name}_with_panda_hand")
    tris = 0
    for el in root:
        if el.tag == "material":
            robot.append(el)
        if el.tag not in ("link", "joint") or el.get("name") in ("world", *body.omit):
            continue
        ends = (el.find("parent").get("link"), el.find("child").get("link")) if el.tag == "joint" else ()
        if "world" in ends or (ends and ends[1] in body.omit):
            continue
        for kind in ("visual", "collision"):
            for part in el.findall(kind):
                mesh = part.find("geometry/mesh")
                if mesh is None:
                    continue
                rel = _mesh_rel(mesh.get("filename"), body.package)
                stem = Path(rel).stem
                if kind == "visual":
                    dst = out / "meshes/arm/visual" / f"{stem}.glb"
                    if not dst.exists():
                        tris += assets._decimate_visual(src / rel, dst)
                else:
                    dst = out / "meshes/arm/collision" / f"{stem}.stl"
                    if not dst.exists():
                        import trimesh

                        trimesh.load(src / rel, force="mesh").export(dst)
                        assets._write_convex_hull(dst, dst.with_name(dst.name + ".convex.stl"))
                mesh.set("filename", str(dst.relative_to(out)))
        robot.append(el)
    return robot, tris


def _hand(robot: ET.Element, body: Embodiment, panda: assets.RobotFiles, out: Path) -> None:
    """The Panda hand's links and joints from the cached Panda, mounted on the flange."""
    proot = ET.parse(panda.urdf).getroot()
    mount = ET.SubElement(robot, "joint", name="panda_hand_mount", type="fixed")
    ET.SubElement(mount, "origin", rpy=f"0 0 {body.mount_yaw}", xyz="0 0 0")
    ET.SubElement(mount, "parent", link=body.flange)
    ET.SubElement(mount, "child", link="panda_hand")
    for el in proot:
        if (el.tag == "link" and el.get("name") in HAND_LINKS) or (el.tag == "joint" and el.get("name") in HAND_JOINTS):
            for mesh in el.iter("mesh"):
                rel = mesh.get("filename")
                (out / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(panda.urdf.parent / rel, out / rel)
                if "collision" in rel:
                    convex = rel + ".convex.stl"
                    shutil.copy(panda.urdf.parent / convex, out / convex)
            robot.append(el)


def _srdf(body: Embodiment, src: Path, panda: assets.RobotFiles, links: set[str]) -> str:
    """The arm's and the hand's disabled pairs, plus the hand against the arm's last two links."""
    pairs = []
    for path in (src / body.srdf, panda.srdf):
        for el in ET.parse(path).getroot().iter("disable_collisions"):
            a, b = el.get("link1"), el.get("link2")
            if a in links and b in links:
                pairs.append((a, b, el.get("reason")))
    arm_links = [name for name in links if name not in HAND_LINKS]
    last = _chain_to(body, src, 3)
    pairs += [(h, a, "Adjacent") for h in HAND_LINKS[:3] for a in last if a in arm_links]
    lines = [f'<robot name="{body.name}_with_panda_hand">']
    lines += [f'  <disable_collisions link1="{a}" link2="{b}" reason="{r}"/>' for a, b, r in pairs]
    return "\n".join([*lines, "</robot>", ""])


def _chain_to(body: Embodiment, src: Path, n: int) -> list[str]:
    """The flange and the ``n`` links above it (the hand touches them by design)."""
    parent = {
        el.find("child").get("link"): el.find("parent").get("link")
        for el in ET.parse(src / body.urdf).getroot()
        if el.tag == "joint"
    }
    chain, link = [body.flange], body.flange
    for _ in range(n):
        link = parent.get(link)
        if link is None:
            break
        chain.append(link)
    return chain


def build_composite(body: Embodiment, root: Path, quiet: bool = False) -> assets.RobotFiles:
    """Generate ``<name>.urdf`` and ``.srdf`` under ``root/robots`` (atomically: temp dir, rename)."""
    final = root / "robots" / f"{body.name}-{ASSET_VERSION}"
    files = assets.RobotFiles(final / f"{body.name}.urdf", final / f"{body.name}.srdf")
    if files.urdf.exists():
        return files
    panda = assets.build_panda(root, quiet=True)
    src = _source() / body.package
    with assets.building(final) as tmp:
        (tmp / "meshes/arm/visual").mkdir(parents=True)
        (tmp / "meshes/arm/collision").mkdir(parents=True)
        robot, tris = _arm_tree(body, src, tmp)
        _hand(robot, body, panda, tmp)
        ET.indent(robot)
        text = ET.tostring(robot, encoding="unicode")
        if "package://" in text:
            raise RuntimeError(f"unexpected package:// URI left in the {body.name} URDF")
        (tmp / files.urdf.name).write_text(text)
        links = {el.get("name") for el in robot if el.tag == "link"}
        (tmp / files.srdf.name).write_text(_srdf(body, src, panda, links))
        assets.stamp(tmp, src, text, tris)
    if not quiet:
        print(f"[vabench] built {body.name} + Panda hand in {final} ({tris} arm visual triangles)")
    return files
