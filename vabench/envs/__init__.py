"""Simulation: SAPIEN scene, two Panda arms, the mplib executor, the camera rig, tasks, seed
screening and demonstrations. The env API (:class:`VABenchEnv`) is the privilege boundary.

Exports resolve lazily so that ``python -m vabench.envs.<tool>`` stays light and clean.
"""

from importlib import import_module

_EXPORTS = {
    "ActionError": "actions",
    "action_names": "actions",
    "parse_action": "actions",
    "CAMERA_PRESETS": "camera",
    "CameraConfig": "camera",
    "EnvConfig": "env",
    "Observation": "env",
    "StepResult": "env",
    "VABenchEnv": "env",
    "TASKS": "tasks",
    "make_task": "tasks",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
