"""The condition keys are declared once, as Condition's fields (vabench.core.condition.key): a sixth key
planted there, and nowhere else, reaches the command line's words, the validated config, the run
folder's path, the outcome row, the analysis (its fills and a table's grouping) and the export's
rows. The plant runs in a fresh interpreter, so no other module has imported the real declaration."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PLANT = """
    lamp: str = key("off", "the planted key: the room's lamp (a test)", "vabench.core.condition:lamps")
"""
CHECK = """

def lamps(value: str) -> None:
    if value not in ("off", "on"):
        raise ValueError(f"no lamp setting {value!r}; choices: off, on")
"""

SCRIPT = """
import sys, types
from pathlib import Path

source = Path("vabench/core/condition.py").read_text()
marker = "\\n\\n    @property\\n    def look("
assert source.count(marker) == 1, "the plant needs the first method after the fields"
planted = source.replace(marker, PLANT.rstrip() + marker) + CHECK
module = types.ModuleType("vabench.core.condition")
module.__file__ = str(Path("vabench/core/condition.py").resolve())
sys.modules["vabench.core.condition"] = module
exec(compile(planted, module.__file__, "exec"), module.__dict__)

import pyarrow as pa
import pyarrow.parquet as pq

from vabench.analysis.load import load_runs, prepare
from vabench.analysis.tables import success_matrix
from vabench.analysis.tables.common import RATE_COLUMNS
from vabench.run.config.run import from_config
from vabench.results.episodes import EpisodeSpec
from vabench.export.runs import ROW_COLUMNS
from vabench.launch.cli import help_text
from vabench.launch.words import composed, misspelt, wrong_word
from vabench.results.outcomes import OutcomeRow, write_row

# the command line: a word checked by the key's own check, a key the config has, then the config
assert wrong_word(["lamp=blue"]) == "'lamp': no lamp setting 'blue'; choices: off, on", wrong_word(["lamp=blue"])
assert wrong_word(["lamp=on"]) is None and misspelt(["lamp=on"]) is None
assert "  lamp " in help_text()
args = ["model=servo", "lamp=on", "tasks=[grasp_single_cube]", "seeds=1", "run_id=plant"]
run = from_config(composed(args), Path("/tmp/vabench-plant"), lambda _: None)
lit = run.condition
assert lit.lamp == "on" and lit.label == "servo | active | summary none | lamp on", lit.label
dark = lit.but(lamp="off")
spec = EpisodeSpec(lit, "grasp_single_cube", 3)
assert spec.key.startswith("servo/lamp_on/active/"), spec.key

# the row: a column of the schema, written and read back; a row written before the key lacks it
out = Path(sys.argv[1])
done = dict(status="ok", success=True, end_reason="success", steps=3)
write_row(out / "lit.parquet", OutcomeRow(**spec.identity(), **done))
old = OutcomeRow(**EpisodeSpec(dark, "grasp_single_cube", 3).identity(), **done).row()
del old["lamp"]
pq.write_table(pa.Table.from_pylist([old]), out / "old.parquet")

# the analysis: the old row filled with the paper's value, and a table's conditions kept apart
p, _ = prepare(load_runs(out))
assert sorted(p["lamp"]) == ["off", "on"], list(p["lamp"])
assert sorted(set(p["condition"])) == sorted([dark.label, lit.label]), set(p["condition"])
m = success_matrix(p)
assert "lamp" in RATE_COLUMNS  # what every rate table carries
assert sorted(set(m["condition"])) == sorted([dark.label, lit.label]), set(m["condition"])

# the export: each episode's meta keeps the key
assert "lamp" in ROW_COLUMNS
print("planted key flows")
"""


def test_a_planted_sixth_key_flows_from_the_command_line_to_the_row_the_analysis_and_the_export(tmp_path):
    code = f"PLANT = {PLANT!r}\nCHECK = {CHECK!r}\n" + textwrap.dedent(SCRIPT)
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "planted key flows" in done.stdout


def test_old_policy_rows_read_their_budget_scale_from_the_model_name(tmp_path):
    """Rows before the budget_scale column named a policy's budget in its model: ``policy`` was
    10x, ``policy-budget-x0.1`` 0.1x. The analysis reads the scale from the name, makes the model
    plain and the label again, so they pool with today's rows; any other model's is 1."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from vabench.analysis.load import load_runs, prepare
    from vabench.core.condition import Condition
    from vabench.results.episodes import EpisodeSpec
    from vabench.results.outcomes import OutcomeRow, write_row

    done = dict(status="ok", success=True, end_reason="success", steps=3)
    for i, model in enumerate(["policy", "policy-budget-x0.1", "openai/gpt-4o"]):
        old = OutcomeRow(**EpisodeSpec(Condition(model), "grasp_single_cube", i).identity(), **done).row()
        del old["budget_scale"]
        pq.write_table(pa.Table.from_pylist([{**old, "schema_version": 10}]), tmp_path / f"old{i}.parquet")
    today = EpisodeSpec(Condition("policy", budget_scale=10.0), "grasp_single_cube", 9)
    write_row(tmp_path / "new.parquet", OutcomeRow(**today.identity(), **done))
    p, notes = prepare(load_runs(tmp_path))
    got = sorted(zip(p["seed"], p["model"], p["budget_scale"], p["condition"], strict=True))
    assert got == [
        (0, "policy", 10.0, "policy | active | summary none | budget_scale 10"),
        (1, "policy", 0.1, "policy | active | summary none | budget_scale 0.1"),
        (2, "openai/gpt-4o", 1.0, "openai/gpt-4o | active | summary none"),
        (9, "policy", 10.0, "policy | active | summary none | budget_scale 10"),
    ]
    assert any("2 policy row(s) written before the budget_scale column" in n for n in notes)
