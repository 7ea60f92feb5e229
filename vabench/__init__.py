"""vabench: VA-Bench, multimodal LLMs as robot agents in SAPIEN physics simulation.

Layers (imports point down only): ``analysis`` reads outcome tables; ``actors`` (Ray) wires
``agents`` (models, harness) to ``envs`` (simulation, the privilege boundary).
"""

__version__ = "0.1.0"
