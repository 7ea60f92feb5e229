"""vabench: VA-Bench, multimodal LLMs as robot agents in SAPIEN physics simulation.

Layers, imports pointing down only (``tests/test_architecture.py`` checks the graph):
``launch`` (Hydra) -> ``actors`` (driver, backends, workers) -> ``agents`` (models, harness,
summaries) -> ``envs`` (simulation; the env API is the privilege boundary) -> ``outcomes`` (the
outcome row) -> ``vocab`` and ``paper`` (the words and the paper's task table). ``analysis`` reads
outcome rows only and never imports the simulator, Ray or agents.
"""

__version__ = "0.1.0"

import sys as _sys

if "gymnasium" in _sys.modules:  # gymnasium.make("vabench:vabench/<Task>-v0") imports vabench: register the ids
    import vabench.gym  # noqa: F401 (registers vabench/<Task>-v0 for every task; docs/gym.md)
