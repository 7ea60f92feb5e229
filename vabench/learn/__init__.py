"""A learned baseline: behaviour cloning of the oracle's commands from a LeRobot export
(docs/learn.md). The loop is export -> train (``experiments/train_bc.py``) -> serve
(``python -m vabench.serve_policy CHECKPOINT``) -> evaluate (``model=policy``).

``data`` reads an export with the project's own tools (pyarrow, vabench.results.media) and needs no torch;
``model``, ``train`` and ``policy`` need the ``learn`` extra (torch), which nothing below this
package imports (tests/test_architecture.py confines it here).
"""
