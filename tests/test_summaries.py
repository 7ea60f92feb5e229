"""Demonstration summaries: the expert.* tools and their frame-inspection gate, the summary schema,
the per-model store and the evaluation modes. Demos here are tiny real-format demo dirs written in
tmp_path (a few PNGs and a demo.json), so nothing touches the simulator."""

from __future__ import annotations

import copy
import hashlib
import json
import os
from datetime import datetime

import numpy as np
import pytest
from PIL import Image

from vabench.agents.summaries import demo_tools, summary_schema, summary_store
from vabench.agents.summaries.demo_tools import DemoError, DemoStore
from vabench.agents.summaries.summary_schema import SummaryError, validate_summary
from vabench.agents.summaries.summary_store import Summary, SummaryStore, resolve_summary, summary_identity, text_digest
from vabench.core.vocab import SummaryMode, summary_mode

CUBE = "grasp_single_cube"
BASKET = "put_everything_in_basket"  # the long-horizon task: four atomic demos, no full-task demo
HELDOUT = "grasp_single_cube_heldout"  # a registered held-out variant of grasp_single_cube
ATOMIC = ("place_single_cube", "grasp_single_bottle", "grasp_single_bottle_upright", "grasp_single_pen")

GOOD = {
    "grasp_object_part": "the cube body",
    "grasp_region": "two opposite side faces, centred",
    "grasp_height_or_depth": "fingertips about half-way down the cube",
    "finger_placement": "pads centred on opposite faces",
    "approach_strategy": "from above, aligned with the cube's yaw",
    "posture_or_rotation": "gripper pointing down, rotated to the cube faces",
    "test_lift_rule": "after closing, lift well clear of the table",
    "pre_close_checks": ["cube between the pads", "fingertips below the cube's mid-height"],
}


def write_demo(root, name, n=5, fps=50 / 3, size=(8, 6)):
    """A real-format demo at the paper preset: frame i is a solid colour whose red channel is 10*i."""
    d = root / "paper" / name
    d.mkdir(parents=True)
    frames = []
    for i in range(n):
        frames.append(f"frame_{i:05d}.png")
        Image.new("RGB", size, (10 * i, 0, 0)).save(d / frames[-1])
    meta = {
        "format": "vabench.demo.v1",
        "task": name,
        "instruction": f"do {name}",
        "frames": frames,
        "fps": round(fps, 3),
        "width": size[0],
        "height": size[1],
    }
    (d / "demo.json").write_text(json.dumps(meta))
    return d


@pytest.fixture
def cube_store(tmp_path):
    write_demo(tmp_path, CUBE)
    return DemoStore(CUBE, root=tmp_path)


@pytest.fixture
def basket_store(tmp_path):
    for name in ATOMIC:
        write_demo(tmp_path, name, n=4)
    return DemoStore(BASKET, root=tmp_path)


# --- expert.retrieve / expert.frame ---------------------------------------------------------------


def test_retrieve_is_a_compact_index(cube_store):
    r = cube_store.retrieve({"mode": "trajectory", "max_rows": 3, "whatever": 1})
    assert r.ok and not r.images
    assert "demo grasp_single_cube: frames 0..4 (5 RGB frames, 16.7 fps, 8x6, step = frame index)" in r.text
    assert "frame_00003" not in r.text and len(r.text.splitlines()) <= 6  # not one line per frame
    assert "RGB only" in r.text and "no end-effector poses, actions, joint states" in r.text
    assert "at least 3 distinct frames" in r.text


def test_frame_is_refused_before_retrieve(cube_store):
    r = cube_store.frame({"step": 0})
    assert not r.ok and not r.images and "expert.retrieve" in r.text
    assert cube_store.inspected == [] and "expert.retrieve" in cube_store.learn_gate()


@pytest.mark.parametrize(
    "args, message",
    [
        ({"steps": list(range(9))}, "field 'steps' has 9 entries; at most 8 frames per call"),
        ({"step": 200}, "frame 200 is outside 0..4 of demo grasp_single_cube"),
        ({"steps": [0, -1]}, "frame -1 is outside 0..4 of demo grasp_single_cube"),
        ({"step": True}, "field 'step' must be an integer frame index 0..4; got True"),
        ({"step": 1.0}, "field 'step' must be an integer frame index 0..4; got 1.0"),
        ({"step": float("nan")}, "field 'step' must be an integer frame index 0..4; got nan"),
        ({"steps": [1, "2"]}, "field 'steps[1]' must be an integer frame index 0..4; got '2'"),
        ({"steps": []}, "field 'steps' is empty; give 1 to 8 frame indices"),
        ({"steps": 3}, "field 'steps' must be a list of frame indices; got 3"),
        ({}, "field 'steps' is missing"),
        ({"step": 1, "steps": [2]}, "either field 'step' or field 'steps', not both"),
        ({"step": 1, "demo": "nope"}, "field 'demo' is 'nope'; allowed: grasp_single_cube"),
        ({"step": 1, "demo": ["x"]}, "field 'demo' is ['x']; allowed: grasp_single_cube"),
        ("step 1", "expert.frame args must be a JSON object; got 'step 1'"),
    ],
)
def test_frame_argument_errors(cube_store, args, message):
    cube_store.retrieve({})
    r = cube_store.frame(args)
    assert not r.ok and not r.images
    assert message in r.text
    assert cube_store.inspected == []  # a refused call records nothing


def test_frame_captions_and_paths(cube_store, tmp_path):
    cube_store.retrieve({})
    r = cube_store.frame({"steps": [3, 0, 3], "view": "ignored"})
    assert r.ok
    assert r.images == [tmp_path / "paper" / CUBE / "frame_00003.png", tmp_path / "paper" / CUBE / "frame_00000.png"]
    assert [np.asarray(Image.open(p))[0, 0, 0] for p in r.images] == [30, 0]  # the right pixels, in order
    lines = r.text.splitlines()
    assert lines[0].startswith("demo grasp_single_cube frame 3/4 ") and "t = 0.18 s" in lines[0]
    assert lines[1].startswith("demo grasp_single_cube frame 0/4 ")
    assert "grasp_single_cube 2" in r.text  # progress toward the gate
    one = cube_store.frame({"step": 4, "demo": CUBE})
    assert one.ok and one.images == [tmp_path / "paper" / CUBE / "frame_00004.png"]


def test_gate_needs_three_distinct_frames(cube_store):
    cube_store.retrieve({})
    for _ in range(3):
        assert cube_store.frame({"step": 0}).ok
    assert "grasp_single_cube 1/3" in cube_store.learn_gate()  # repeats do not count
    cube_store.frame({"steps": [0, 1, 1]})
    assert "grasp_single_cube 2/3" in cube_store.learn_gate()
    cube_store.frame({"step": 4})
    assert cube_store.learn_gate() is None
    assert cube_store.inspected == [(CUBE, 0), (CUBE, 1), (CUBE, 4)]


def test_composite_store_needs_the_demo_and_three_frames_of_each(basket_store):
    r = basket_store.retrieve({"mode": "trajectory"})
    for name in ATOMIC:
        assert f"demo {name}: frames 0..3 (4 RGB frames" in r.text
    assert '"demo" is required' in r.text and "of each demo" in r.text
    refused = basket_store.frame({"step": 0})
    assert not refused.ok and "field 'demo' is required: this task has 4 demos" in refused.text
    basket_store.frame({"demo": "grasp_single_pen", "steps": [0, 1, 2, 3]})
    basket_store.frame({"demo": "place_single_cube", "steps": [0, 0, 1]})
    gate = basket_store.learn_gate()
    assert "of each demo" in gate
    assert "place_single_cube 2/3" in gate and "grasp_single_bottle 0/3" in gate
    assert "grasp_single_bottle_upright 0/3" in gate and "grasp_single_pen" not in gate
    for name in ATOMIC[:3]:
        basket_store.frame({"demo": name, "steps": [1, 2, 3]})
    assert basket_store.learn_gate() is None
    assert len(basket_store.inspected) == 4 + 4 + 3 + 3 and basket_store.inspected[0][0] == "grasp_single_bottle"


def test_held_out_variant_uses_its_base_demo(tmp_path):
    write_demo(tmp_path, CUBE)
    store = DemoStore(HELDOUT, root=tmp_path)
    assert list(store.demos) == [CUBE] and store.summary_task == CUBE
    assert demo_tools.task_demos(BASKET) == ATOMIC and demo_tools.summary_task(BASKET) == BASKET


def test_missing_or_malformed_demo(tmp_path):
    with pytest.raises(FileNotFoundError, match="python -m vabench.envs.cli.demos --task grasp_single_cube"):
        DemoStore(CUBE, root=tmp_path)
    d = write_demo(tmp_path, CUBE)
    meta = json.loads((d / "demo.json").read_text())
    (d / "demo.json").write_text(json.dumps({**meta, "format": "other"}))
    with pytest.raises(DemoError, match="format is 'other'"):
        DemoStore(CUBE, root=tmp_path)
    (d / "demo.json").write_text(json.dumps({**meta, "frames": ["../evil.png"]}))
    with pytest.raises(DemoError, match="not a plain file name"):
        DemoStore(CUBE, root=tmp_path)
    (d / "frame_00002.png").unlink()
    (d / "demo.json").write_text(json.dumps(meta))
    with pytest.raises(DemoError, match="frame file frame_00002.png is missing"):
        DemoStore(CUBE, root=tmp_path)


# --- summary schema -------------------------------------------------------------------------------

REQUIRED = [*summary_schema.REQUIRED_TEXT, "pre_close_checks"]


def test_a_good_summary_passes_stripped_and_unknown_fields_dropped():
    out = validate_summary({**GOOD, "grasp_region": "  centred faces \n", "notes": "x", "summary_model": "m"}, CUBE)
    assert out["grasp_region"] == "centred faces"
    assert set(out) == set(GOOD)
    assert validate_summary({**GOOD, "task_stage": None, "safety_notes": None}, CUBE) == GOOD  # null = absent


@pytest.mark.parametrize("field", REQUIRED)
def test_every_required_field_is_checked(field):
    missing = {k: v for k, v in GOOD.items() if k != field}
    with pytest.raises(SummaryError, match=f"required field '{field}' is missing"):
        validate_summary(missing, CUBE)
    for bad in ("", "   ", 42, None, ["a"] if field != "pre_close_checks" else "a", {}):
        with pytest.raises(SummaryError) as e:
            validate_summary({**GOOD, field: bad}, CUBE)
        assert f"field '{field}' must be a non-empty" in str(e.value), bad


def test_all_problems_are_reported_at_once():
    with pytest.raises(SummaryError) as e:
        validate_summary({**GOOD, "grasp_region": "", "required_arms": 3, "pre_close_checks": ["ok", ""]}, CUBE)
    text = str(e.value)
    assert "'grasp_region'" in text and "'required_arms'" in text and "'pre_close_checks[1]'" in text


@pytest.mark.parametrize(
    "extra, message",
    [
        ({"semantic_ambiguity": float("nan")}, "field 'semantic_ambiguity' must be a finite number in [0, 1]; got nan"),
        ({"semantic_ambiguity": float("inf")}, "'semantic_ambiguity' must be a finite number in [0, 1]; got inf"),
        ({"semantic_ambiguity": 1.5}, "'semantic_ambiguity' must be a finite number in [0, 1]; got 1.5"),
        ({"semantic_ambiguity": True}, "'semantic_ambiguity' must be a finite number in [0, 1]; got True"),
        ({"required_arms": True}, "field 'required_arms' must be the integer 1 or 2; got True"),
        ({"required_arms": 3}, "field 'required_arms' must be the integer 1 or 2; got 3"),
        ({"required_arms": 2.0}, "field 'required_arms' must be the integer 1 or 2; got 2.0"),
        ({"task_stage": ""}, "field 'task_stage' must be a non-empty string; got ''"),
        ({"functional_constraints": "x"}, "field 'functional_constraints' must be a list of non-empty strings"),
        ({"safety_notes": ["ok", 3]}, "field 'safety_notes[1]' must be a non-empty string; got 3"),
        ({"avoid_roles": ["x"] * 21}, "field 'avoid_roles' has 21 items"),
        ({"arm_assignment": 7}, "field 'arm_assignment' must be a non-empty string or a list of non-empty strings"),
        ({"coordination_sequence": []}, "field 'coordination_sequence' must be a non-empty list"),
        ({"grasp_region": "y" * 2001}, "field 'grasp_region' is 2001 characters long ('yyyy"),
        ({"safety_notes": ["z" * 1000] * 20}, "bytes of JSON; at most 16000 allowed"),
    ],
)
def test_optional_fields_and_limits(extra, message):
    with pytest.raises(SummaryError) as e:
        validate_summary({**GOOD, **extra}, CUBE)
    assert message in str(e.value)
    assert len(str(e.value)) < 1000  # huge values are truncated in the message


def test_optional_fields_accepted():
    extra = {
        "task_stage": "initial_grasp",
        "post_grasp_goal": "hold the cube above the table",
        "functional_constraints": ["keep the cube level"],
        "required_arms": 1,
        "semantic_ambiguity": 0,
        "arm_assignment": "right arm only",
        "synchronized_actions": ["none"],
        "grasp_region": "y" * 2000,
    }
    assert validate_summary({**GOOD, **extra}, CUBE) == {**GOOD, **extra}


AFFORDANCE = {
    "part_shape": "box",
    "symmetry_class": "four_fold",
    "centering_tolerance": "moderate",
    "vertical_tolerance": "permissive",
    "avoid_ends": False,
    "requires_bilateral_contact": True,
    "requires_dual_arm": False,
}


def test_affordance_profile():
    out = validate_summary({**GOOD, "affordance_profile": {**AFFORDANCE, "extra": 1}}, CUBE)
    assert out["affordance_profile"] == AFFORDANCE
    cases = [
        ({k: v for k, v in AFFORDANCE.items() if k != "avoid_ends"}, "lacks avoid_ends"),
        ({**AFFORDANCE, "part_shape": "sphere"}, "'affordance_profile.part_shape' is 'sphere'; allowed: unknown,"),
        ({**AFFORDANCE, "symmetry_class": "Two_Fold"}, "'affordance_profile.symmetry_class' is 'Two_Fold'"),
        ({**AFFORDANCE, "vertical_tolerance": ["strict"]}, "'affordance_profile.vertical_tolerance' is ['strict']"),
        ({**AFFORDANCE, "requires_dual_arm": 0}, "'affordance_profile.requires_dual_arm' must be true or false"),
        ("box", "field 'affordance_profile' must be an object"),
    ]
    for profile, message in cases:
        with pytest.raises(SummaryError) as e:
            validate_summary({**GOOD, "affordance_profile": profile}, CUBE)
        assert message in str(e.value)


@pytest.mark.parametrize(
    "text",
    ["pick up the two bottles first", "3 cubes go in last", "there are five objects", "two red cubes", "cube A first"],
)
def test_basket_summary_rejects_inventory(text):
    with pytest.raises(SummaryError, match="inventory.*evaluation scene has a different inventory"):
        validate_summary({**GOOD, "post_grasp_goal": text}, BASKET)
    assert validate_summary({**GOOD, "post_grasp_goal": text}, CUBE)["post_grasp_goal"] == text  # single task: fine


def test_basket_inventory_is_checked_everywhere():
    with pytest.raises(SummaryError, match=r"'safety_notes\[0\]'.*'pen D'"):
        validate_summary({**GOOD, "safety_notes": ["leave pen D for last"]}, BASKET)
    with pytest.raises(SummaryError, match=r"'object_strategies key'.*'cube A'"):
        validate_summary({**GOOD, "object_strategies": {"cube_A": "top grasp"}}, BASKET)
    with pytest.raises(SummaryError, match=r"'object_strategies.pen'.*'2 pens'"):
        validate_summary({**GOOD, "object_strategies": {"pen": "2 pens lie flat"}}, BASKET)


def test_basket_accepts_ordinary_text_and_object_strategies():
    ordinary = {
        **GOOD,
        "test_lift_rule": "lift 5 cm after closing, then carry a cube over the basket",
        "safety_notes": [
            "grasp one object at a time",
            "rotate the pen 90 degrees before release",
            "align the pads with the bottle Z axis",
            "open about 2 cube widths",
            "A bottle lying down needs a top grasp",
        ],
        "object_strategies": {"cube": "top grasp", "horizontal_bottle": "grasp the middle of the body"},
    }
    out = validate_summary(ordinary, BASKET)
    assert out["object_strategies"] == ordinary["object_strategies"]
    assert "object_strategies" not in validate_summary(ordinary, CUBE)  # composite tasks only
    with pytest.raises(SummaryError, match="field 'object_strategies.pen' must be a non-empty string"):
        validate_summary({**GOOD, "object_strategies": {"pen": ""}}, BASKET)


# --- the store ------------------------------------------------------------------------------------


def test_store_round_trip_with_a_safe_file_name(tmp_path):
    store = SummaryStore(tmp_path)
    model = "openrouter/anthropic/claude-x:beta"
    assert not store.has(model, CUBE) and store.load(model, CUBE) is None
    path = store.save(model, CUBE, {**GOOD, "unknown": 1}, [(CUBE, 4), (CUBE, 0), (CUBE, 4)], prompt_version="p1")
    assert path == tmp_path / "openrouter_anthropic_claude-x_beta" / "grasp_single_cube.json"
    record = json.loads(path.read_text())
    assert record["format"] == "vabench.summary.v1" and record["task"] == CUBE
    assert record["summary_model"] == model and record["summary"] == GOOD
    assert record["frames_inspected"] == [[CUBE, 0], [CUBE, 4]] and record["prompt_version"] == "p1"
    assert datetime.fromisoformat(record["created_at"]).utcoffset().total_seconds() == 0
    loaded = store.load(model, CUBE)
    assert store.has(model, CUBE)
    assert loaded == Summary(CUBE, model, GOOD, path, record["created_at"], ((CUBE, 0), (CUBE, 4)), "p1")
    assert store.load("other-model", CUBE) is None


def test_held_out_variant_reads_its_base_summary(tmp_path):
    store = SummaryStore(tmp_path)
    path = store.save("m", CUBE, GOOD, [])
    assert store.path("m", HELDOUT) == path
    assert store.load("m", HELDOUT).fields == GOOD and store.load("m", HELDOUT).task == CUBE


def test_save_validates_and_checks_the_author(tmp_path):
    store = SummaryStore(tmp_path)
    with pytest.raises(SummaryError, match="required field 'grasp_region' is missing"):
        store.save("m", CUBE, {k: v for k, v in GOOD.items() if k != "grasp_region"}, [])
    with pytest.raises(SummaryError, match="field 'summary_model' is 'other'"):
        store.save("m", CUBE, {**GOOD, "summary_model": "other"}, [])
    with pytest.raises(SummaryError, match="frames_inspected"):
        store.save("m", CUBE, GOOD, [(CUBE, True)])
    assert not any(tmp_path.rglob("*"))  # nothing written
    store.save("a/b", CUBE, GOOD, [])
    with pytest.raises(SummaryError, match="holds the summary of model 'a/b'"):
        store.save("a:b", CUBE, GOOD, [])  # same file name: refuse to overwrite another model's summary
    with pytest.raises(SummaryError, match="summary_model is 'a/b', not 'a:b'"):
        store.load("a:b", CUBE)
    with pytest.raises(ValueError, match="cannot name a directory"):
        store.path("..", CUBE)


def test_atomic_write_leaves_no_temp_files(tmp_path, monkeypatch):
    store = SummaryStore(tmp_path)
    path = store.save("m", CUBE, GOOD, [])
    path = store.save("m", CUBE, {**GOOD, "grasp_region": "second"}, [])
    assert os.listdir(path.parent) == [path.name]
    before = path.read_text()

    def fail(*args):
        raise OSError("disk full")

    monkeypatch.setattr(summary_store.os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        store.save("m", CUBE, {**GOOD, "grasp_region": "third"}, [])
    assert path.read_text() == before and os.listdir(path.parent) == [path.name]


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda r: "{not json",
        lambda r: json.dumps({**r, "summary": {**r["summary"], "grasp_region": ""}}),
        lambda r: json.dumps({**r, "format": "v0"}),
        lambda r: json.dumps({**r, "task": "place_cube_in_bowl"}),
        lambda r: json.dumps(r).replace('"prompt_version": null', '"prompt_version": NaN'),
        lambda r: json.dumps([r]),
    ],
)
def test_corrupt_file_error_names_the_path(tmp_path, corrupt):
    store = SummaryStore(tmp_path)
    path = store.save("m", CUBE, GOOD, [])
    path.write_text(corrupt(json.loads(path.read_text())))
    with pytest.raises(SummaryError, match="corrupt summary file") as e:
        store.load("m", CUBE)
    assert str(path) in str(e.value)


def test_summary_text_is_stable_and_never_names_its_author(tmp_path):
    """Own and shared summaries read the same: the heading names the task, not the model that wrote it
    (the reference strips summary_model), so a reader is not primed by whose summary it holds."""
    fields = {**GOOD, "affordance_profile": AFFORDANCE}
    s = Summary(CUBE, "prov/model-1", copy.deepcopy(fields), None)
    text = s.text()
    head, body = text.split("\n", 1)
    assert CUBE in head and "prov/model-1" not in text and "model-1" not in text
    assert json.loads(body) == fields and "summary_model" not in json.loads(body)
    assert list(json.loads(body)) == sorted(fields)  # sorted keys
    reordered = Summary(CUBE, "prov/model-1", dict(reversed(list(fields.items()))), None)
    assert reordered.text() == text
    assert Summary(CUBE, "other/reader", copy.deepcopy(fields), None).text() == text  # own reads as shared
    assert s.digest() == hashlib.sha256(text.encode()).hexdigest()[:12] == text_digest(text)


def test_a_stored_shared_summary_reaches_the_reader_without_its_author(tmp_path):
    store = SummaryStore(tmp_path)
    store.save("author/writer-7", CUBE, {**GOOD, "summary_model": "author/writer-7"}, [(CUBE, 0)])
    shared = resolve_summary(store, "shared:author/writer-7", "reader", HELDOUT)
    assert shared.summary_model == "author/writer-7"  # kept in the store (and the row's summary_model)
    assert "writer-7" not in shared.text() and "author/" not in shared.text()
    assert json.loads(store.path("author/writer-7", CUBE).read_text())["summary_model"] == "author/writer-7"


def test_summary_identity_says_whether_the_asked_summary_was_there(tmp_path):
    store = SummaryStore(tmp_path)
    store.save("m", CUBE, GOOD, [])
    s = store.load("m", CUBE)
    assert summary_identity(s, "own") == {"summary_learned": True, "summary_digest": s.digest()}
    assert summary_identity(s, "shared:m") == {"summary_learned": True, "summary_digest": s.digest()}
    assert summary_identity(None, "own") == {"summary_learned": False, "summary_digest": None}  # learning failed
    assert summary_identity(None, "none") == {"summary_learned": None, "summary_digest": None}
    assert summary_identity(None, SummaryMode("none")) == {"summary_learned": None, "summary_digest": None}
    assert len(s.digest()) == 12 and s.digest() != Summary(CUBE, "m", {**GOOD, "grasp_region": "x"}).digest()


# --- evaluation modes -----------------------------------------------------------------------------


def test_summary_mode():
    assert summary_mode("own") == SummaryMode("own", None) and str(summary_mode("own")) == "own"
    assert summary_mode("none") == SummaryMode("none", None)
    shared = summary_mode("shared:openai/gpt-x")
    assert (shared.kind, shared.source, str(shared)) == ("shared", "openai/gpt-x", "shared:openai/gpt-x")
    for bad in ("", "shared:", "shared: ", "shared", "OWN", "model", None):
        with pytest.raises(ValueError, match=r"allowed: own, none, expert, shared:<model id>"):
            summary_mode(bad)


def test_resolve_summary(tmp_path):
    store = SummaryStore(tmp_path)
    store.save("author/m", CUBE, GOOD, [])
    mine = {**GOOD, "grasp_region": "mine"}
    assert resolve_summary(store, "own", "reader", CUBE) is None  # not learned yet: the caller learns it first
    store.save("reader", CUBE, mine, [])
    assert resolve_summary(store, "none", "reader", CUBE) is None
    assert resolve_summary(store, "own", "reader", CUBE).fields == mine
    shared = resolve_summary(store, "shared:author/m", "reader", CUBE)
    assert shared.fields == GOOD and shared.summary_model == "author/m"
    assert resolve_summary(store, SummaryMode("shared", "author/m"), "reader", CUBE) == shared
    with pytest.raises(SummaryError) as e:
        resolve_summary(store, "shared:nobody", "reader", "place_cube_in_bowl")
    assert str(tmp_path / "nobody" / "place_cube_in_bowl.json") in str(e.value)
    assert "is missing" in str(e.value) and "learning episode" in str(e.value)
    with pytest.raises(ValueError, match="allowed"):
        resolve_summary(store, "sometimes", "reader", CUBE)
