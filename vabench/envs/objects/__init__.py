"""Procedural object builders, one module per kind, each returning :class:`~vabench.envs.sim.bodies.BodySpec`
made of convex parts: :mod:`.common` (colours, box, cube, bowl, target pad, pens, bottles),
:mod:`.tools` (bell, hammer), :mod:`.pot`, :mod:`.shoe` (shoes and mat) and :mod:`.basket`.
"""
