"""``python -m vabench.launch``: see :mod:`vabench.launch`."""

from vabench.launch.cli import cli

cli()
