"""Exports of vabench's episodes into other projects' formats: ``python -m vabench.export lerobot``
writes a LeRobot dataset v3.0 (docs/export.md). Reads run folders and demonstrations; never
imports Ray, the agents or the actors."""
