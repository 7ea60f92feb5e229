"""experiments/analysis.ipynb, executed headless (nbclient) on a small synthetic run folder: every
cell runs, the tables and figures it promises are written, and an empty run folder fails loudly
with NoOutcomesError. The kernel is this interpreter (a kernelspec built here), so the test runs
the venv's python whether or not the venv is activated."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat
import pandas as pd
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from vabench.analysis import load_runs, success_matrix
from vabench.results.outcomes import COLUMNS, SCHEMA_VERSION, write_row

NOTEBOOK = Path(__file__).resolve().parents[1] / "experiments" / "analysis.ipynb"
KERNEL = "vabench-notebook-test"
EXPERIMENT = "nbtest"
BASE_TASKS = {"grasp_single_cube": "single", "place_cube_in_bowl": "single", "lift_pot": "dual"}


def outcome(model, task, seed, run_index, success, **kw) -> dict:
    """One complete outcome row: every column present (None where not set)."""
    r = {c: None for c in COLUMNS}
    r.update(
        schema_version=SCHEMA_VERSION,
        run_id=f"run-{run_index}",
        experiment=EXPERIMENT,
        model=model,
        summary_source="own",
        summary_model=model,
        protocol="active",
        track="base",
        task=task,
        base_task=task,
        arms=BASE_TASKS.get(task, "single"),
        seed=seed,
        run_index=run_index,
        attempt=1,
        status="ok",
        success=success,
        end_reason="success" if success else "stop",
        checkpoints_done=2 if success else seed % 2,
        checkpoints_total=2,
        privileged=False,
    )
    r.update(kw)
    r["condition"] = f"{r['model']} | {r['protocol']} | summary {r['summary_source']}"
    return r


def synthetic_rows() -> list[dict]:
    rows = []
    for run in (1, 2):
        for task in BASE_TASKS:
            for seed in (0, 1):
                ok = (seed + run) % 2 == 0
                rows.append(outcome("model-a", task, seed, run, ok))
                rows.append(outcome("model-a", task, seed, run, seed == 0, protocol="passive"))
                rows.append(outcome("model-b", task, seed, run, ok and task != "lift_pot"))
                rows.append(outcome("model-b", task, seed, run, False, summary_source="none", summary_model=None))
    held = dict(track="transfer", base_task="grasp_single_cube")
    rows += [outcome("model-a", "grasp_single_cube_heldout", seed, 1, seed == 0, **held) for seed in (0, 1)]
    rows.append(outcome("model-a", "put_everything_in_basket", 0, 1, False, track="long_horizon", objects_placed=3))
    rows.append(outcome("model-b", "lift_pot", 2, 1, False, status="infra_error", end_reason="infra_error", error="X"))
    rows.append(outcome("oracle", "grasp_single_cube", 0, 1, True, summary_source="none", privileged=True))
    return rows


@pytest.fixture
def kernel(tmp_path, monkeypatch) -> str:
    """A kernelspec that starts ipykernel on this very interpreter (found through JUPYTER_PATH)."""
    spec = tmp_path / "jupyter" / "kernels" / KERNEL
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    env = {"IPYTHONDIR": str(tmp_path / "ipython")}  # no user profile or startup files
    (spec / "kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": KERNEL, "language": "python", "env": env})
    )
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    return KERNEL


def execute(kernel: str, cwd: Path, run_folder: Path, out: Path, local_models=None) -> nbformat.NotebookNode:
    """Run the notebook with its parameters cell set to these values (as papermill would); one cell
    appended reports the kernel's interpreter."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    params = next(c for c in nb.cells if c.cell_type == "code")
    assert "parameters" in params.metadata.get("tags", []), "the first code cell is the parameters cell"
    assert all(name in params.source for name in ("RUN_FOLDERS", "OUT", "LOCAL_MODELS"))
    params.source = f"RUN_FOLDERS = [{str(run_folder)!r}]\nOUT = {str(out)!r}\nLOCAL_MODELS = {local_models!r}\n"
    nb.cells.append(nbformat.v4.new_code_cell("import sys\nprint('kernel:', sys.executable)"))
    client = NotebookClient(
        nb,
        kernel_name=kernel,
        timeout=120,
        shutdown_kernel="immediate",
        resources={"metadata": {"path": str(cwd)}},
    )
    return client.execute()


def texts(nb: nbformat.NotebookNode) -> str:
    """Every text a cell printed or displayed (streams, Markdown, plain reprs)."""
    out = []
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            out.append(o.get("text", ""))
            data = o.get("data", {})
            out += [data.get("text/markdown", ""), data.get("text/plain", "")]
    return "\n".join(out)


def test_notebook_runs_on_a_run_folder_and_writes_every_table_and_figure(tmp_path, kernel):
    run = tmp_path / "runs" / "main"
    rows = synthetic_rows()
    for i, r in enumerate(rows):
        write_row(run / "outcomes" / f"episode-{i:03d}.parquet", r)
    out = tmp_path / "analysis_out"

    nb = execute(kernel, tmp_path, run, out, local_models=["model-b"])

    shown = texts(nb)
    assert f"kernel: {sys.executable}" in shown  # the venv's interpreter ran it
    assert f"{len(rows)} rows; experiments: ['{EXPERIMENT}']" in shown
    df = load_runs(run)
    assert success_matrix(df).attrs["title"] in shown
    tables = [
        "success_matrix",
        "macro_averages",
        "active_passive",
        "active_passive_tasks",
        "heldout_vs_base",
        "long_horizon",
        "summary_sources",
        "summary_sources_tasks",
        "summary_source_macro",
        "local_models",
        "local_models_tasks",
        "checkpoint_progress",
        "infra_summary",
    ]
    written = {p.name for p in out.iterdir()}
    missing = [f"{t}.{ext}" for t in tables for ext in ("md", "csv") if f"{t}.{ext}" not in written]
    assert not missing, (missing, sorted(written))
    for fig in ("success_bars.png", "success_heatmap.png", "active_passive.png"):
        assert (out / fig).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", fig
    assert any(
        o.get("output_type") == "display_data" and "image/png" in o.get("data", {})
        for c in nb.cells
        for o in c.get("outputs", [])
    )

    matrix = pd.read_csv(out / "success_matrix.csv")
    assert len(matrix) == 5 * len(BASE_TASKS)  # 5 base conditions (the oracle included) x 3 tasks
    assert (matrix["condition"].str.contains("(privileged)", regex=False)).any()
    assert matrix["excluded"].sum() == 1  # the infra_error row is reported, not counted
    assert "(privileged)" in (out / "success_matrix.md").read_text()


def test_notebook_fails_loudly_on_an_empty_run_folder(tmp_path, kernel):
    empty = tmp_path / "runs" / "empty"
    (empty / "outcomes").mkdir(parents=True)
    out = tmp_path / "analysis_out"
    with pytest.raises(CellExecutionError) as err:
        execute(kernel, tmp_path, empty, out)
    assert "NoOutcomesError" in str(err.value) and "no outcome rows (*.parquet) under" in str(err.value)
    assert not out.exists()
