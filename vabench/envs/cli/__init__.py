"""Command-line tools, each run as ``python -m vabench.envs.cli.<name>``: :mod:`.assets` (build the
robot asset cache), :mod:`.seeds` (screen or check the seed manifests), :mod:`.demos` (record the
expert demonstrations) and :mod:`.gallery` (a picture of every task). Nothing outside this package
imports it.
"""
