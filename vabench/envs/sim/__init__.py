"""The physics and rendering core: the SAPIEN scene and table, the two Panda arms and their asset
cache, the mplib planner and the fixed executor, the camera rig and its shaders, geometry helpers,
and the body description (:mod:`.bodies`) that both SAPIEN and mplib read.

It knows no task and no object builder: tasks (``vabench.envs.tasks``) build their objects with
``vabench.envs.objects`` and hand them to :class:`.scene.World` as :class:`.bodies.BodySpec`.
"""
