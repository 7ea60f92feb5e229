"""What the servo agent reads from an observation (vabench.core.boundary): the current images, the robot
state and the two feedback booleans, and colour segmentation of the instruction's objects.

Only the observation is read: no simulator, no object poses, no camera calibration. Colours are
classic rules on RGB (a red cube, a green pad or cube, a blue bowl, a yellow bell, a dark bottle);
the object a mask finds is its largest connected blob. A pen (white and black, like the robot) is a
hole in the table's beige that holds both.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
from scipy import ndimage

from vabench.core.boundary import ArmProprio, Observation

_VECTORS = ("ee_position", "ee_quat_wxyz", "ee_rpy_deg", "gc", "rx", "ry", "rz")

# Lowest saturation of a bottle pixel. Diffuse light scales a colour, and the gamma-encoded image keeps
# its saturation whatever the shade: the cola's dark body sits at 0.45 in every face, so a threshold
# there splits the body into speckles by one grey level (the lean shader v2 regression); the table is
# below 0.15, the red label and cap above 0.6.
BOTTLE_SAT = 0.35


@dataclass
class Seen:
    """One observation as the servo agent sees it: the robot state (as arrays), the images, the
    feedback booleans and the world point a depth_point tool call just returned."""

    instruction: str
    arms: dict[str, ArmProprio]  # each field an array, for the skills' arithmetic
    images: list[np.ndarray] = field(default_factory=list)  # RGB uint8; active: one, passive: five
    valid: bool | None = None
    planned: bool | None = None
    point: np.ndarray | None = None  # the depth_point tool's answer in this step (None: none, or no surface)


def seen_of(obs: Observation) -> Seen:
    """The servo's view of an observation (vabench.core.boundary): nothing else reaches it."""
    arms = {arm: replace(p, **{k: np.array(getattr(p, k)) for k in _VECTORS}) for arm, p in obs.arms.items()}
    fb, result = obs.feedback, obs.tool_result
    data = result.data if result is not None and result.data else {}
    point = np.array(data["point"]) if data.get("point") is not None else None
    return Seen(
        instruction=obs.instruction,
        arms=arms,
        images=[f.pixels for f in obs.images],
        valid=None if fb is None else fb.valid,
        planned=None if fb is None else fb.planner_success,
        point=point,
    )


# -- colour segmentation -------------------------------------------------------------------


def _channels(img: np.ndarray):
    f = img.astype(np.float32) / 255.0
    r, g, b = f[..., 0], f[..., 1], f[..., 2]
    mx, mn = f.max(axis=2), f.min(axis=2)
    sat = (mx - mn) / np.maximum(mx, 1e-6)
    return r, g, b, mx, sat


def colour_mask(img: np.ndarray, colour: str) -> np.ndarray:
    r, g, b, mx, sat = _channels(img)
    if colour == "red":
        return (r > 0.35) & (r > 1.8 * g) & (r > 1.8 * b)
    if colour == "green":
        return (g > r + 0.15) & (g > b + 0.08)
    if colour == "blue":
        return (b > r + 0.15) & (b > g + 0.05)
    if colour == "yellow":
        return (r > 0.45) & (g > 0.35) & (sat > 0.4) & (b < 0.75 * g) & (np.abs(r - g) < 0.3)
    if colour == "dark_red":  # a bottle: brown or red body and its red label and cap, the whole bottle
        return (sat > BOTTLE_SAT) & (r > g) & (r > b) & (mx > 0.12)
    if colour == "saturated":
        return (sat > 0.45) & (mx > 0.12)
    raise ValueError(f"unknown colour {colour!r}")


@dataclass(frozen=True)
class Blob:
    centre: np.ndarray  # (u, v) pixels, u right, v down
    area: int
    angle_deg: float  # orientation of the blob's bounding rectangle, in [0, 90) (image axes)
    long_angle_deg: float  # orientation of the blob's principal (long) axis, in [0, 180)
    elongation: float  # principal axis length ratio
    box: tuple[int, int, int, int]  # v0, v1, u0, u1 (inclusive-exclusive)


def blobs(mask: np.ndarray, min_area: int = 30) -> list[Blob]:
    """Connected components of ``mask`` (largest first) with their centre and orientation."""
    mask = ndimage.binary_opening(mask, iterations=1)
    labels, n = ndimage.label(mask)
    if n == 0:
        return []
    areas = ndimage.sum(mask, labels, range(1, n + 1))
    out = []
    for i in np.argsort(-areas):
        if areas[i] < min_area:
            break
        vs, us = np.nonzero(labels == i + 1)
        out.append(_describe(us, vs))
    return out


def largest(mask: np.ndarray) -> np.ndarray | None:
    """The largest connected component of ``mask`` as a mask of its own, or None when it is empty."""
    labels, n = ndimage.label(mask)
    if n == 0:
        return None
    return labels == 1 + int(np.argmax(ndimage.sum(mask, labels, range(1, n + 1))))


def _describe(us: np.ndarray, vs: np.ndarray) -> Blob:
    pts = np.stack([us, vs], 1).astype(float)
    c = pts.mean(0)
    d = pts - c
    cov = d.T @ d / len(d)
    w, vecs = np.linalg.eigh(cov)
    major = vecs[:, 1]
    long_angle = float(np.degrees(np.arctan2(major[1], major[0])) % 180.0)
    elong = float(np.sqrt(w[1] / max(w[0], 1e-6)))
    best, best_area = 0.0, np.inf
    for a in np.arange(0.0, 90.0, 1.0):
        t = np.radians(a)
        x = d[:, 0] * np.cos(t) + d[:, 1] * np.sin(t)
        y = -d[:, 0] * np.sin(t) + d[:, 1] * np.cos(t)
        area = np.ptp(x) * np.ptp(y)
        if area < best_area:
            best, best_area = float(a), area
    return Blob(
        c, len(us), best, long_angle, elong, (int(vs.min()), int(vs.max()) + 1, int(us.min()), int(us.max()) + 1)
    )


def _holes(table: np.ndarray, open_top: bool) -> np.ndarray:
    """Non-table regions enclosed by table; ``open_top``: the table goes on beyond the image's top edge
    (the active topdown view, whose top is the far side of the table)."""
    if not open_top:
        return ndimage.binary_fill_holes(table) & ~table
    padded = np.vstack([np.ones((1, table.shape[1]), bool), table])
    return (ndimage.binary_fill_holes(padded) & ~padded)[1:]


def pen_blob(img: np.ndarray, min_area: int = 60, open_top: bool = False) -> Blob | None:
    """A pen (a white barrel with black ends) lying on the table: a hole in the table's beige that holds
    both bright grey and black pixels and is elongated. Parts of the robot reach the table from outside
    and are no holes; a pen the hand covers in the image is not found."""
    r, g, b, mx, sat = _channels(img)
    table = (sat > 0.07) & (sat < 0.4) & (r > b + 0.04) & (mx > 0.3)
    holes = _holes(table, open_top) & ~(sat > 0.35)  # not a coloured support
    labels, n = ndimage.label(holes)
    best = None
    for i in range(1, n + 1):
        part = labels == i
        area = int(part.sum())
        if area < min_area or (mx[part] < 0.35).sum() < 8 or ((mx[part] > 0.6) & (sat[part] < 0.08)).sum() < 15:
            continue
        vs, us = np.nonzero(part)
        blob = _describe(us, vs)
        if blob.elongation >= 2.5 and (best is None or blob.area > best.area):
            best = blob
    return best


def table_object(img: np.ndarray, min_area: int = 150) -> Blob | None:
    """The largest hole in the table's beige: an object that lies on the table, whatever its colour."""
    r, g, b, mx, sat = _channels(img)
    table = (sat > 0.07) & (sat < 0.4) & (r > b + 0.04) & (mx > 0.3)
    found = blobs(ndimage.binary_fill_holes(table) & ~table, min_area)
    return found[0] if found else None


def long_ends(img: np.ndarray, colour: str, min_area: int = 100):
    """(one end, the other end, unit axis from the first to the second) of the largest ``colour``
    blob, in pixels, each end the mean of its outermost 3 pixels along the principal axis; or None."""
    biggest = largest(ndimage.binary_opening(colour_mask(img, colour), iterations=1))
    if biggest is None:
        return None
    vs, us = np.nonzero(biggest)
    if len(us) < min_area:
        return None
    pts = np.stack([us, vs], 1).astype(float)
    c = pts.mean(0)
    axis = np.linalg.eigh(np.cov((pts - c).T))[1][:, 1]
    t = (pts - c) @ axis
    return pts[t <= t.min() + 3].mean(0), pts[t >= t.max() - 3].mean(0), axis


def near_edge(blob: Blob, shape: tuple[int, ...], shift: np.ndarray, margin: int = 60) -> bool:
    """Whether ``blob`` lies within ``margin`` pixels of the image border that an image shift along
    ``shift`` (u, v) moves it toward."""
    v0, v1, u0, u1 = blob.box
    h, w = shape[:2]
    return bool(
        (shift[0] < 0 and u0 < margin)
        or (shift[0] > 0 and u1 > w - margin)
        or (shift[1] < 0 and v0 < margin)
        or (shift[1] > 0 and v1 > h - margin)
    )


def find(img: np.ndarray, colour: str, min_area: int = 30, open_top: bool = False) -> Blob | None:
    if colour == "pen":
        return pen_blob(img, max(min_area, 60), open_top)
    if colour == "bell":  # a yellow bell, or a silver one: whatever stands alone on the table
        return find(img, "yellow", max(min_area, 100)) or table_object(img, max(min_area, 150))
    mask = colour_mask(img, colour)
    found = blobs(mask, min_area)
    return found[0] if found else None


# -- what the instruction names --------------------------------------------------------------


@dataclass(frozen=True)
class Goal:
    target: str  # colour of the object to grasp (or press)
    destination: str | None  # colour of where it goes, None: lift only
    kind: str  # grasp | place | press
    shape: str  # cube | long | upright | bell
    dest_kind: str = ""  # pad | bowl | stack


def goal_from_instruction(text: str) -> Goal:
    t = text.lower()
    if "basket" in t:  # every object, one by one
        return Goal("object", "slot", "basket", "mixed")
    if "bell" in t:
        return Goal("bell", None, "press", "bell")
    if "shoe" in t:  # the arm on its side: toe to -x, onto the mat
        return Goal("shoe", "blue", "shoe", "shoe")
    if "giver" in t:  # both arms: one hands the block to the other
        return Goal("red", None, "handover", "long")
    if "pot" in t:  # both arms: a handle each
        return Goal("bars", None, "pot", "pot")
    if "bottle" in t:
        shape = "upright" if "upright" in t and "lying" not in t else "long"
        if "green target" in t:
            return Goal("dark_red", "green", "place", "upright", "pad")
        return Goal("dark_red", None, "grasp", shape)
    if "red cube" in t:
        if "bowl" in t:
            return Goal("red", "blue", "place", "cube", "bowl")
        if "green cube" in t:
            return Goal("red", "green", "place", "cube", "stack")
        if "green target" in t:
            return Goal("red", "green", "place", "cube", "pad")
        return Goal("red", None, "grasp", "cube")
    if "hammer" in t:  # tool use: grasp the handle, then strike with the head
        return Goal("yellow", "red", "strike", "tool")
    if "pen" in t:
        return Goal("pen", None, "grasp", "long")
    return Goal("saturated", None, "grasp", "long")
