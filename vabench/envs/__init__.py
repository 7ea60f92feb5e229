"""Simulation: SAPIEN scene, two Panda arms, the mplib executor, the camera rig, tasks, seed
screening and demonstrations. The env API (:class:`VABenchEnv`) is the privilege boundary.

Layout: ``sim/`` is the physics and rendering core (no task, no object builder); ``objects/``
builds bodies for it; ``tasks/`` sets up scenes, experts and predicates; ``env.py`` (with
``actions.py`` and ``privileged.py``) is the env API; ``seeds.py`` and ``demos.py`` are the seed
manifests (``seed_manifests/``) and the demonstrations; ``cli/`` holds the command-line tools.

Exports resolve lazily so that ``python -m vabench.envs.cli.<tool>`` stays light and clean.
"""

from importlib import import_module

_EXPORTS = {
    "ActionError": "actions",
    "action_names": "actions",
    "parse_action": "actions",
    "CameraConfig": "sim.camera",
    "RENDER_PRESETS": "render",
    "RenderPreset": "render",
    "render_preset": "render",
    "EnvConfig": "config",
    "RecordingConfig": "config",
    "PerturbationConfig": "perturb",
    "Observation": "observation",
    "StepResult": "observation",
    "VABenchEnv": "env",
    "TASKS": "tasks",
    "make_task": "tasks",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
