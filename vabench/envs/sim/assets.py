"""Robot description cache: the Franka Panda from `example-robot-data`, made loadable by both
SAPIEN and mplib, with decimated visual meshes for fast CPU rendering.

Nothing here is committed: the files are generated from the installed package into the cache
(``$VABENCH_CACHE``, default ``~/.cache/vabench``) at set-up or on first use. Why each step:

* mplib resolves mesh paths relative to the URDF file and cannot read ``package://`` URIs, so
  the URDF is rewritten with relative paths next to copied meshes.
* mplib with ``use_convex=True`` (twice as fast and matching SAPIEN's per-file convex hulls)
  wants ``<mesh>.convex.stl`` beside every collision mesh; we write the hulls.
* The stock visual meshes total ~134k triangles and dominate lavapipe render time; welded and
  quadric-decimated copies (~10x fewer) render 3-5x faster and look nearly the same.

Run ``python -m vabench.envs.cli.assets`` to build the cache ahead of time.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ASSET_VERSION = "panda-v1"  # bump when the generated files change
DECIMATE_KEEP = 0.10  # fraction of visual triangles kept
MIN_FACES = 40  # small parts (screws, labels) are kept as they are below this


def cache_dir() -> Path:
    return Path(os.environ.get("VABENCH_CACHE", Path.home() / ".cache" / "vabench"))


def _panda_source() -> Path:
    from importlib import metadata

    try:
        dist = metadata.distribution("example-robot-data")
    except metadata.PackageNotFoundError as e:
        raise FileNotFoundError("the PyPI package example-robot-data is not installed") from e
    cand = Path(dist.locate_file("cmeel.prefix/share/example-robot-data/robots/panda_description"))
    if (cand / "urdf/panda.urdf").exists():
        return cand
    raise FileNotFoundError(
        "panda_description not found in example-robot-data; reinstall it with `pip install example-robot-data`"
    )


@dataclass(frozen=True)
class RobotFiles:
    urdf: Path
    srdf: Path


def _decimate_visual(src: Path, dst: Path) -> int:
    """Weld, decimate and re-colour one .dae visual into a .glb; returns the triangle count."""
    import fast_simplification
    import numpy as np
    import trimesh

    scene = trimesh.load(src, force="scene")
    out = trimesh.Scene()
    total = 0
    for i, mesh in enumerate(scene.dump(concatenate=False)):
        color = np.array([200, 200, 200, 255], dtype=np.uint8)
        mat = getattr(mesh.visual, "material", None)
        if mat is not None:
            factor = getattr(mat, "baseColorFactor", None)
            if factor is None and getattr(mat, "diffuse", None) is not None:
                factor = mat.diffuse
            if factor is not None:
                color = np.asarray(factor, dtype=np.uint8)
        # Drop UVs so that seams do not stop vertex welding; the decimator shreds unwelded soup.
        plain = trimesh.Trimesh(mesh.vertices, mesh.faces, process=True)
        plain.merge_vertices()
        verts, faces = plain.vertices, plain.faces
        if len(faces) > MIN_FACES:
            verts, faces = fast_simplification.simplify(
                np.asarray(verts, np.float32), np.asarray(faces, np.int32), target_reduction=1.0 - DECIMATE_KEEP
            )
        part = trimesh.Trimesh(verts, faces, process=False)
        part.visual = trimesh.visual.TextureVisuals(
            material=trimesh.visual.material.PBRMaterial(baseColorFactor=color, metallicFactor=0.1, roughnessFactor=0.6)
        )
        out.add_geometry(part, geom_name=f"part{i}")
        total += len(faces)
    out.export(dst)
    return total


def _write_convex_hull(src: Path, dst: Path) -> None:
    import trimesh

    trimesh.load(src, force="mesh").convex_hull.export(dst)


@contextmanager
def building(final: Path) -> Iterator[Path]:
    """A temp folder beside ``final`` that becomes ``final`` when the block ends without error
    (atomic: a rename; a process that loses the race keeps the winner's identical copy); it is
    removed otherwise."""
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=final.parent))
    try:
        yield tmp
        try:
            tmp.rename(final)
        except OSError:  # another process won the race; its copy is identical
            pass
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def stamp(folder: Path, src: Path, urdf: str, tris: int) -> None:
    """A built description's ``SOURCE``: where it came from, its URDF's digest, its visual triangles."""
    digest = hashlib.sha256(urdf.encode()).hexdigest()[:12]
    (folder / "SOURCE").write_text(f"{src}\nurdf sha256[:12] {digest}\nvisual triangles {tris}\n")


def build_panda(root: Path, quiet: bool = False) -> RobotFiles:
    """Generate the Panda description under ``root`` (atomically: a temp dir then rename)."""
    final = root / "robots" / ASSET_VERSION
    if (final / "panda.urdf").exists():  # a built cache needs no source package
        return RobotFiles(final / "panda.urdf", final / "panda.srdf")
    src = _panda_source()
    with building(final) as tmp:
        (tmp / "meshes/visual").mkdir(parents=True)
        (tmp / "meshes/collision").mkdir(parents=True)
        tris = 0
        for dae in sorted((src / "meshes/visual").glob("*.dae")):
            tris += _decimate_visual(dae, tmp / "meshes/visual" / (dae.stem + ".glb"))
        for stl in sorted((src / "meshes/collision").glob("*.stl")):
            shutil.copy(stl, tmp / "meshes/collision" / stl.name)
            _write_convex_hull(stl, tmp / "meshes/collision" / (stl.name + ".convex.stl"))
        urdf = (src / "urdf/panda.urdf").read_text()
        prefix = "package://example-robot-data/robots/panda_description/"
        urdf = re.sub(re.escape(prefix) + r"meshes/visual/(\w+)\.dae", r"meshes/visual/\1.glb", urdf)
        urdf = urdf.replace(prefix + "meshes/collision/", "meshes/collision/")
        if "package://" in urdf:
            raise RuntimeError("unexpected package:// URI left in the Panda URDF")
        (tmp / "panda.urdf").write_text(urdf)
        # SAPIEN's loader silently reads <urdf stem>.srdf; mplib takes it explicitly.
        shutil.copy(src / "srdf/panda.srdf", tmp / "panda.srdf")
        stamp(tmp, src, urdf, tris)
    if not quiet:
        print(f"[vabench] built Panda description in {final} ({tris} visual triangles)")
    return RobotFiles(final / "panda.urdf", final / "panda.srdf")


def panda_files() -> RobotFiles:
    """Paths of the cached Panda description, building it on first use."""
    return build_panda(cache_dir())
