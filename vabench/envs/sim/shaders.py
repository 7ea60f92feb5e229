"""A lean copy of SAPIEN's default rasterising shader, generated into the cache.

Same look, a fraction of the CPU render time per frame on lavapipe, where the per-pixel work is
memory traffic: at 1280x960 (the ``paper`` preset) every G-buffer byte per pixel costs about a
millisecond. The stock ``default`` shader writes seven G-buffer targets and five composite
outputs (segmentation, linear depth, object coordinates, ...), shades in one full-screen pass and
tone-maps in another, and filters shadows with 25 texture gathers per pixel; an RGB observation
needs none of the extra targets. The lean copy keeps albedo, specular and normal (the deferred
pass reconstructs positions from depth, so the stock position target is dropped), drops
emission/custom/segmentation, image-based lighting (we set no environment map, so it adds
nothing), the transparency, line and point passes, tone-maps inside the lighting pass (no
composite pass and no float lighting target), and filters shadows with 4 gathers (a 2x2 kernel
around each texel). :mod:`vabench.envs.sim.scene` stores albedo and specular in 8 bits and
normals in 16 (``scene.G_BUFFER_FORMATS``). Images differ from ``default`` by < 0.3/255 on average,
only in shadow edges.

The files are SAPIEN's (Apache-2.0), copied from the installed wheel and patched at first use;
nothing is committed. A patch that no longer matches (another SAPIEN version) is an error, not
a silent fallback.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from .assets import building, cache_dir

LEAN_VERSION = "lean-v2"  # v2: no position target, no composite pass


def _stock_dir() -> Path:
    import sapien

    return Path(sapien.__file__).parent / "vulkan_shader"


def _sub(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    if old not in text:
        raise RuntimeError(f"cannot patch {path.name}: SAPIEN's shader changed (expected sapien==3.0.3)")
    path.write_text(text.replace(old, new, 1))


def _cut(path: Path, start: str, end: str, replacement: str = "") -> None:
    text = path.read_text()
    a = text.find(start)
    b = text.find(end, a)
    if a < 0 or b < 0:
        raise RuntimeError(f"cannot patch {path.name}: SAPIEN's shader changed (expected sapien==3.0.3)")
    path.write_text(text[:a] + replacement + text[b:])


def _patch(root: Path) -> None:
    lean = root / "lean"
    for name in ("gbuffer1.frag", "gbuffer1.vert", "line.frag", "line.vert", "point.frag", "point.vert"):
        (lean / name).unlink()
    _cut(
        root / "common/shadow.glsl",
        "const int PCF_SampleCount = 25;",
        "float ShadowMapPCF",
        "const int PCF_SampleCount = 4;\nvec2 PCF_Samples[PCF_SampleCount] = {\n"
        "  {-0.5, -0.5}, {0.5, -0.5}, {-0.5, 0.5}, {0.5, 0.5}\n};\n\n",
    )
    g = lean / "gbuffer.frag"
    _sub(
        g,
        "layout(location = 4) out uvec4 outSegmentation;\n"
        "layout(location = 5) out vec4 outCustom;\n"
        "layout(location = 6) out vec4 outEmission;",
        "",
    )
    _sub(g, "  outCustom = vec4(objectCoord, 1);\n  outSegmentation = inSegmentation;\n", "")
    _sub(g, "layout(location = 1) out vec4 outPositionRaw;\n", "")  # deferred.frag reconstructs it from depth
    _sub(g, "  outPositionRaw = inPosition;\n", "")
    _sub(g, "layout(location = 2) out vec4 outSpecular;", "layout(location = 1) out vec4 outSpecular;")
    _sub(g, "layout(location = 3) out vec4 outNormal;", "layout(location = 2) out vec4 outNormal;")
    _cut(g, "  outEmission = materialBuffer.emission;", "  if ((materialBuffer.textureMask & 1) != 0) {")
    d = lean / "deferred.frag"
    _sub(
        d,
        "layout(set = 2, binding = 1) uniform sampler2D samplerPositionRaw;\n"
        "layout(set = 2, binding = 2) uniform sampler2D samplerSpecular;\n"
        "layout(set = 2, binding = 3) uniform sampler2D samplerNormal;\n"
        "layout(set = 2, binding = 4) uniform sampler2D samplerEmission;\n"
        "layout(set = 2, binding = 5) uniform sampler2D samplerGbufferDepth;\n"
        "layout(set = 2, binding = 6) uniform sampler2D samplerCustom;",
        "layout(set = 2, binding = 1) uniform sampler2D samplerSpecular;\n"
        "layout(set = 2, binding = 2) uniform sampler2D samplerNormal;\n"
        "layout(set = 2, binding = 3) uniform sampler2D samplerGbufferDepth;",
    )
    _sub(
        d,
        "  vec4 emission = texture(samplerEmission, inUV);\n  vec3 color = emission.rgb * emission.a;",
        "  vec3 color = vec3(0.0);",
    )
    _cut(d, "  color += diffuseIBL(diffuseAlbedo, wnormal);", "  color += sceneBuffer.ambientLight.rgb")
    # tone-map (gamma 1/2.2, clamp; exposure 1) where the light is summed: the composite pass goes
    _sub(d, "layout(location = 0) out vec4 outLighting;", "layout(location = 0) out vec4 outColor;")
    _sub(
        d,
        "  if (depth == 1) {\n"
        "    outLighting = vec4(getBackgroundColor((cameraBuffer.viewMatrixInverse * csPosition).xyz), 0.f);\n"
        "  } else {\n"
        "    outLighting = vec4(color, 1);\n"
        "  }",
        "  vec4 lit = depth == 1\n"
        "    ? vec4(getBackgroundColor((cameraBuffer.viewMatrixInverse * csPosition).xyz), 0.f) : vec4(color, 1);\n"
        "  outColor = clamp(vec4(pow(lit.rgb, vec3(1 / 2.2)), lit.a), vec4(0), vec4(1));",
    )
    for name in ("composite0.frag", "composite.vert"):
        (lean / name).unlink()


SHADERS = ("lean", "default")


def shader_dir(name: str) -> str:
    """The directory SAPIEN should compile camera shaders from, for a config value."""
    if name == "lean":
        return str(lean_shader_dir())
    if name == "default":
        return "default"
    raise ValueError(f"camera shader must be one of {', '.join(SHADERS)}, got {name!r}")


def lean_shader_dir(root: Path | None = None) -> Path:
    """Path of the lean shader directory, generating it on first use (atomically)."""
    import sapien

    final = (root or cache_dir()) / "shaders" / f"sapien-{sapien.__version__}-{LEAN_VERSION}"
    if (final / "lean" / "gbuffer.frag").exists():
        return final / "lean"
    with building(final) as tmp:
        stock = _stock_dir()
        shutil.copytree(stock / "common", tmp / "common")
        shutil.copytree(stock / "default", tmp / "lean")
        _patch(tmp)
    return final / "lean"
