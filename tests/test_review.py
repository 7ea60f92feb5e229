"""The review app as a user meets it: ``python -m vabench.launch`` makes a small run folder (oracle
and random episodes), ``python -m vabench.review`` serves it, requests and a real Chromium
(Debian's, through its WebDriver) use it. Also its safety: paths stay inside the run folder, a
bad label changes nothing, and nothing but ``_annotations/`` is ever written."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import socket
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests

from vabench.analysis import labels as L
from vabench.results.media import video_info
from vabench.results.recordfile import VIDEO_NAME, read_events
from vabench.review import runs

pytestmark = pytest.mark.xdist_group("review")  # one run folder and one server for the module
ENV = {**os.environ, "RAY_AUTH_MODE": "disabled"}


XSS = "<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\">"


def launch(results: Path, *overrides: str, run_id: str = "review") -> None:
    cmd = [sys.executable, "-m", "vabench.launch", f"results_dir={results}", f"run_id={run_id}", "ray.address=none"]
    cmd += ["render=fast"]  # the images these tests measure (640x480)
    subprocess.run([*cmd, *overrides], check=True, env=ENV, capture_output=True, timeout=600)


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory) -> Path:
    results = tmp_path_factory.mktemp("review")
    launch(results, "tasks=[grasp_single_cube]", "seeds=1", "protocol=both")  # oracle, active and passive
    launch(results, "model=random", "tasks=[grasp_single_cube]", "seeds=1")
    return results / "review"


@pytest.fixture(scope="module")
def hostile_run(run_folder) -> Path:
    """A second run folder whose agent's answers carry HTML: the oracle's answers replayed with a
    script in every reason (answers and replies are untrusted text; the pages must show them, not
    run them)."""
    rec = run_folder / records(run_folder)["oracle/active"]
    lines = []
    for e in read_events(rec):
        if e["type"] == "reply":  # a chat model's record
            e["text"] = json.dumps({**json.loads(e["text"]), "reason": XSS})
        elif e["type"] == "answer":  # an agent's that reads observations (the oracle's)
            e["payload"] = {**e["payload"], "reason": XSS}
        lines.append(json.dumps(e))
    hostile = run_folder.parent / "hostile.jsonl"
    hostile.write_text("\n".join(lines) + "\n")
    launch(run_folder.parent, "model=replay", f"model.extra.record={hostile}", "tasks=[grasp_single_cube]",
           "seeds=1", run_id="hostile")  # fmt: skip
    return run_folder.parent / "hostile"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serving(*args: str, lines: int = 1):
    """``python -m vabench.review ARGS`` running, with the first ``lines`` it printed. The app
    prints its URL once its port is bound (connections wait in the listen queue): no polling."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "vabench.review", *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=ENV,
    )  # fmt: skip
    try:
        yield proc, [proc.stdout.readline().strip() for _ in range(lines)]
    finally:
        proc.terminate()
        proc.wait(timeout=20)


URL = re.compile(r"http://(?P<host>[^/:]+|\[[^]]+\]):(?P<port>\d+)(?P<rest>/\S*)")


@pytest.fixture(scope="module")
def server(run_folder, hostile_run):
    with serving(str(run_folder), str(hostile_run), "--port", "0") as (proc, (line,)):
        assert line.startswith("vabench review: http://127.0.0.1:"), line  # it says where it listens
        port = int(URL.search(line)["port"])
        assert port != 0  # --port 0: the system picked a free port, and the line names it
        yield f"http://127.0.0.1:{port}"


def tree(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def records(run_folder: Path) -> dict[str, str]:
    """model/protocol -> record path of the run's episodes."""
    import pandas as pd

    df = pd.read_parquet(run_folder)
    return {f"{r.model}/{r.protocol}": r.record for r in df.itertuples()}


# -- safety ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "../outside.txt",
        "%2e%2e/outside.txt",
        "_records/%2e%2e/%2e%2e/outside.txt",
        "..%2Foutside.txt",
        "%2Fetc%2Fpasswd",
        "link/outside.txt",
    ],
)
def test_a_path_from_the_browser_never_leaves_the_run_folder(server, run_folder, path):
    (run_folder.parent / "outside.txt").write_text("secret")
    if not (run_folder / "link").exists():
        (run_folder / "link").symlink_to(run_folder.parent)  # a link out of the run folder
    try:
        r = requests.get(f"{server}/run/0/file/{path}", timeout=10)
        assert r.status_code == 404 and "secret" not in r.text
        assert "error" in r.json() or r.json() == {"detail": "Not Found"}
        r = requests.get(f"{server}/run/0/episode", params={"record": path.replace("%2e", ".")}, timeout=10)
        assert r.status_code == 404 and "secret" not in r.text
    finally:
        (run_folder / "link").unlink()


def test_files_inside_the_run_folder_are_served(server, run_folder):
    rec = records(run_folder)["oracle/active"]
    r = requests.get(f"{server}/run/0/file/{Path(rec).parent.as_posix()}/{VIDEO_NAME}", timeout=10)
    assert r.status_code == 200 and r.headers["content-type"] == "video/mp4"
    assert r.content == (run_folder / Path(rec).parent / VIDEO_NAME).read_bytes()


@pytest.mark.parametrize(
    "body, status, message",
    [
        ("not json", 400, "one JSON object"),
        ('["a list"]', 400, "JSON object"),
        ('{"record": "REC", "annotator": "a1", "labels": {"TL": 2}}', 400, "labels.TL must be 0, 1 or null"),
        ('{"record": "REC", "annotator": "a1", "labels": {"TL": true}}', 400, "labels.TL"),
        ('{"record": "REC", "annotator": "a1", "gates": {"error": 1}}', 400, "gates.error must be true, false"),
        ('{"record": "REC", "annotator": "a1", "labels": {"XX": 1}}', 400, "keys among TL"),
        ('{"record": "REC", "annotator": "../evil"}', 400, "annotator must match"),
        ('{"record": "REC", "annotator": "a1", "extra": 1}', 400, "unknown field"),
        ('{"record": "../x/events.jsonl", "annotator": "a1"}', 400, "relative record path"),
        ('{"record": "_records/none/events.jsonl", "annotator": "a1"}', 404, "not the record of an episode"),
    ],
)
def test_a_malformed_label_gets_a_clear_error_and_changes_nothing(server, run_folder, body, status, message):
    before = tree(run_folder)
    rec = records(run_folder)["oracle/active"]
    r = requests.post(
        f"{server}/run/0/api/labels",
        data=body.replace("REC", rec),
        headers={"Content-Type": "application/json"},
        timeout=10,
    )
    assert r.status_code == status and message in r.json()["error"]
    assert tree(run_folder) == before


def test_the_app_writes_nothing_but_annotations(server, run_folder):
    before = tree(run_folder)
    rec = records(run_folder)["random/active"]
    for page in ("/", "/run/0", f"/run/0/episode?record={rec}", "/run/0/labels.csv", "/run/0/api/labels"):
        assert requests.get(server + page, timeout=10).status_code == 200
    saved = requests.post(
        f"{server}/run/0/api/labels", json={"record": rec, "annotator": "w1", "labels": {"MS": 0}}, timeout=10
    )
    assert saved.status_code == 200 and saved.json()["labels"]["MS"] == 0
    after = tree(run_folder)
    changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
    assert changed == {f"{L.ANNOTATIONS}/w1.jsonl"}


def test_only_this_apps_pages_can_save_a_label(server, run_folder):
    """A page on another site can POST to 127.0.0.1 (a form or text/plain needs no preflight) or
    reach it under another host name (DNS rebinding): both are refused and nothing is written."""
    before = tree(run_folder)
    rec = records(run_folder)["oracle/active"]
    body = json.dumps({"record": rec, "annotator": "evil", "labels": {"TL": 0}})
    url = f"{server}/run/0/api/labels"
    r = requests.post(url, data=body, headers={"Content-Type": "text/plain"}, timeout=10)
    assert r.status_code == 415 and "application/json" in r.json()["error"]
    r = requests.post(url, data=body, headers={"Content-Type": "application/json", "Origin": "http://evil.example"})
    assert r.status_code == 403 and "evil.example" in r.json()["error"]
    r = requests.get(f"{server}/run/0", headers={"Host": "evil.example"}, timeout=10)
    assert r.status_code == 400
    assert tree(run_folder) == before


def test_the_timeline_pairs_each_observation_with_its_action_and_the_state_after_it(run_folder):
    rec = records(run_folder)["oracle/active"]
    ep = runs.episode(run_folder, rec)
    acted = [s for s in ep.steps if s.action]
    assert len(acted) == len(ep.steps) == pd_row(run_folder, rec)["steps"]  # a success: no card without action
    for s in acted:
        assert s.observation["step"] == s.index and s.observation["images"] == [f"frames/step_{s.index:03d}_active.jpg"]
        assert s.action["step"] == s.state["step"] == s.index + 1
        assert s.state["recording"] == f"recording/step_{s.index + 1:03d}.jpg"
        assert [e["type"] for e in s.exchange][:2] == ["answer", "decision"]  # the oracle reads observations
    assert ep.initial["step"] == 0 and ep.final_state is acted[-1].state
    assert ep.checkpoints == acted[-1].action["checkpoints"] and all(ep.checkpoints.values())


def pd_row(run_folder: Path, record: str) -> dict:
    import pandas as pd

    df = pd.read_parquet(run_folder)
    return df[df["record"] == record].iloc[0].to_dict()


def test_model_text_is_shown_never_run(server, hostile_run, browser):
    from selenium.webdriver.common.by import By

    rec = records(hostile_run)["replay:oracle/active"]
    raw = requests.get(f"{server}/run/1/episode", params={"record": rec}, timeout=10).text
    assert XSS not in raw and "&lt;script&gt;document.title" in raw
    browser.get(f"{server}/run/1/episode?record={requests.utils.quote(rec)}")
    reason = browser.find_element(By.CSS_SELECTOR, "#step-0 .reason")
    assert XSS in reason.text and browser.title != "pwned"
    assert not browser.find_elements(By.CSS_SELECTOR, ".reason script, .reason img")


# -- the browser ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    for tool in ("/usr/bin/chromium", "/usr/bin/chromedriver"):
        assert Path(tool).exists(), f"{tool} is missing: scripts/setup.sh installs chromium and chromium-driver"
    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        options.add_argument(arg)
    options.binary_location = "/usr/bin/chromium"
    driver = webdriver.Chrome(options=options, service=Service("/usr/bin/chromedriver"))
    driver.implicitly_wait(0)
    yield driver
    driver.quit()


def wait_for(driver, condition, what: str, timeout: float = 20):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(lambda d: condition(d), message=what)


def js(driver, script: str, *args):
    return driver.execute_script(script, *args)


def test_a_reviewer_filters_steps_through_an_episode_and_labels_it(server, run_folder, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select

    d = browser
    rec = records(run_folder)
    d.get(f"{server}/run/0")
    summary = d.find_element(By.ID, "summary")
    assert summary.text.startswith("3 of 3 episodes · success 2/3 (66.7%)")
    Select(d.find_element(By.ID, "filter-model")).select_by_visible_text("oracle")  # filtered on the server
    wait_for(d, lambda d: summary.text.startswith("2 of 3 episodes · success 2/2 (100.0%)"), "the filter")
    assert {r.text for r in d.find_elements(By.CSS_SELECTOR, "#rows td[data-key=model]")} == {"oracle (privileged)"}
    cells = "return [...document.querySelectorAll('#rows td[data-key=protocol]')].map(t => t.textContent)"

    def protocols(d):
        return js(d, cells)

    d.find_element(By.CSS_SELECTOR, "#head th[data-key=protocol]").click()  # sort by protocol
    wait_for(d, lambda d: protocols(d) == ["active", "passive"], "sorted by protocol")
    d.find_element(By.CSS_SELECTOR, "#head th[data-key=protocol]").click()  # and the other way
    wait_for(d, lambda d: protocols(d) == ["passive", "active"], "sorted the other way")
    d.find_elements(By.CSS_SELECTOR, "a.episode-link")[1].click()  # the active oracle episode

    wait_for(d, lambda d: "/episode" in d.current_url, "the episode page")
    assert rec["oracle/active"] in requests.utils.unquote(d.current_url)
    # the model-facing image exactly as sent, and the video
    first = d.find_element(By.CSS_SELECTOR, "#step-0 img.model-image")
    wait_for(d, lambda d: js(d, "return arguments[0].complete && arguments[0].naturalWidth", first) == 640, "image")
    sent = requests.get(first.get_attribute("src"), timeout=10).content
    assert sent == (run_folder / Path(rec["oracle/active"]).parent / "frames/step_000_active.jpg").read_bytes()
    wait_for(d, lambda d: js(d, "return document.getElementById('video').readyState") >= 1, "video metadata")
    assert js(d, "return document.getElementById('video').videoWidth") == 320
    # keyboard: j / k between steps
    body = d.find_element(By.TAG_NAME, "body")
    for _ in range(3):
        body.send_keys("j")
    assert d.find_element(By.CSS_SELECTOR, ".step.current").get_attribute("data-step") == "2"
    body.send_keys("k")
    assert d.find_element(By.CSS_SELECTOR, ".step.current").get_attribute("data-step") == "1"
    assert "valid" in d.find_element(By.CSS_SELECTOR, "#step-1 .stephead").text.split()  # not "invalid"

    entered = {
        "ann1": ({"error": "false"}, {"TL": "1", "SR": "1", "FG": "0"}, "clean grasp"),
        "ann2": ({"error": "true", "ambiguity": "true"}, {"TL": "1", "ED": "0", "AE": "1"}, "slow"),
    }
    status = d.find_element(By.ID, "save-status")
    for who, (gates, labels, notes) in entered.items():
        box = d.find_element(By.ID, "annotator")
        box.clear()
        box.send_keys(who, Keys.TAB)  # change: loads this annotator's labels (none yet)
        wait_for(d, lambda d, who=who: f"no labels of {who}" in status.text, "annotator loaded")
        for gate, v in gates.items():
            d.find_element(By.CSS_SELECTOR, f"input[name=gate-{gate}][value='{v}']").click()
            wait_for(d, lambda d, who=who: "saved" in status.text and who in status.text, "gate saved")
        for c, v in labels.items():
            d.find_element(By.CSS_SELECTOR, f"input[name=label-{c}][value='{v}']").click()
        d.find_element(By.ID, "notes").send_keys(notes, Keys.TAB)
        wait_for(d, lambda d, n=notes: any(n == x["notes"] for x in _saved(server, rec["oracle/active"])), "notes")
    # ED/OC/PF are off (n/a) while ann1's error gate says no
    assert js(d, "return document.querySelector('input[name=label-ED]').disabled") is False  # ann2 is loaded
    d.refresh()
    wait_for(d, lambda d: "loaded labels of ann2" in d.find_element(By.ID, "save-status").text, "reload")
    assert d.find_element(By.CSS_SELECTOR, "input[name=label-AE][value='1']").is_selected()
    assert d.find_element(By.ID, "notes").get_attribute("value") == "slow"
    box = d.find_element(By.ID, "annotator")
    box.clear()
    box.send_keys("ann1", Keys.TAB)
    wait_for(d, lambda d: "loaded labels of ann1" in d.find_element(By.ID, "save-status").text, "ann1 loaded")
    assert d.find_element(By.CSS_SELECTOR, "input[name=label-FG][value='0']").is_selected()
    assert js(d, "return document.querySelector('input[name=label-ED]').disabled") is True
    assert "ann1, ann2" in d.find_element(By.ID, "others").text

    # the export (the app's CSV) holds exactly what was entered, and the CLI writes the same
    text = requests.get(f"{server}/run/0/labels.csv", timeout=10).text
    rows = {r["annotator"]: r for r in csv.DictReader(io.StringIO(text)) if r["record"] == rec["oracle/active"]}
    assert set(rows) == {"ann1", "ann2"}
    for who, (gates, labels, notes) in entered.items():
        row = rows[who]
        assert row["notes"] == notes and row["model"] == "oracle" and row["protocol"] == "active"
        assert {g: row[f"gate_{g}"] for g in L.GATES} == {g: {"true": "True", "false": "False"}.get(
            gates.get(g, ""), "") for g in L.GATES}  # fmt: skip
        assert {c: row[c] for c in L.CRITERIA} == {c: labels.get(c, "") for c in L.CRITERIA}
    cli = subprocess.run(
        [sys.executable, "-m", "vabench.review", "labels", str(run_folder)], capture_output=True, text=True, check=True
    )
    assert cli.stdout == text

    # episodes follow the run page's filter and order (oracle only, passive before active): n is the
    # end of that list, p the passive episode
    js(d, "document.activeElement.blur()")
    nxt = d.find_element(By.ID, "next-episode")
    wait_for(d, lambda d: nxt.get_attribute("data-ready") == "1", "the neighbours asked of the server")
    assert "disabled" in nxt.get_attribute("class")
    d.find_element(By.TAG_NAME, "body").send_keys("p")
    wait_for(d, lambda d: rec["oracle/passive"] in requests.utils.unquote(d.current_url), "previous episode")
    assert len(d.find_elements(By.CSS_SELECTOR, "#step-0 img.model-image")) == 5  # the passive five views
    d.find_element(By.TAG_NAME, "body").send_keys("u")
    wait_for(d, lambda d: d.current_url.endswith("/run/0"), "back to the run")
    Select(d.find_element(By.ID, "filter-labels")).select_by_visible_text("labelled")
    labelled = {x["record"] for x in requests.get(f"{server}/run/0/api/labels", timeout=10).json()}
    assert rec["oracle/active"] in labelled
    wait_for(d, lambda d: d.find_element(By.ID, "summary").text.startswith(f"{len(labelled)} of 3 episodes"), "labels")


def _saved(server: str, record: str) -> list[dict]:
    return requests.get(f"{server}/run/0/api/labels", params={"record": record}, timeout=10).json()


def test_videos_are_remade_for_a_run_folder(run_folder):
    rec = run_folder / Path(records(run_folder)["random/active"]).parent
    (rec / VIDEO_NAME).unlink()
    out = subprocess.run(
        [sys.executable, "-m", "vabench.review", "videos", str(run_folder), "--fps", "4", "--size", "160x120"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "made 1 video(s); 2 already there" in out.stdout
    info = video_info(rec / VIDEO_NAME)
    assert info["fps"] == 4 and info["frames"] == len(list((rec / "recording").glob("step_*.jpg")))
    assert info["size"] == (160, 120)
    bad = subprocess.run([sys.executable, "-m", "vabench.review", "videos", str(run_folder), "--size", "161x120"],
                         capture_output=True, text=True)  # fmt: skip
    assert bad.returncode == 2 and "size must be even" in bad.stderr


# -- any screen: 800 to 1920 px ------------------------------------------------------------------

BOXES = """
const box = (e) => { const r = e.getBoundingClientRect();
  return [r.left + scrollX, r.top + scrollY, r.right + scrollX, r.bottom + scrollY]; };
const pick = (sel) => [...document.querySelectorAll(sel)].filter(e => e.getClientRects().length).map(box);
return {reply: pick('.reply pre, .reason, .feedback, .rejected'), images: pick('img.model-image, img.rec, video'),
        panel: pick('#annotation'), scroll: document.documentElement.scrollWidth, inner: innerWidth};
"""


def overlaps(a, b) -> bool:
    return min(a[2], b[2]) - max(a[0], b[0]) > 1 and min(a[3], b[3]) - max(a[1], b[1]) > 1


@pytest.fixture
def sized(browser):
    yield browser
    browser.set_window_size(1400, 1000)


@pytest.mark.parametrize("width", [800, 1000, 1280, 1920])
@pytest.mark.parametrize("episode", ["oracle/active", "oracle/passive"])
def test_reply_text_images_and_panel_never_overlap(server, run_folder, sized, width, episode):
    d = sized
    d.set_window_size(width, 1000)
    d.get(f"{server}/run/0/episode?record={requests.utils.quote(records(run_folder)[episode])}")
    js(d, "for (const i of document.images) i.loading = 'eager'")  # the lazy recording views too
    wait_for(
        d,
        lambda d: js(
            d, "return [...document.images].every(i => i.id === 'viewer-image' || (i.complete && i.naturalWidth))"
        ),
        "images",
        30,
    )
    b = js(d, BOXES)
    assert b["reply"] and b["images"] and b["panel"]
    assert b["scroll"] <= b["inner"] + 1, f"the page scrolls sideways at {width} px"
    groups = [("reply", b["reply"]), ("image", b["images"]), ("panel", b["panel"])]
    for i, (name_a, boxes_a) in enumerate(groups):
        for name_b, boxes_b in groups[i:]:
            for x, a in enumerate(boxes_a):
                for y, c in enumerate(boxes_b):
                    if name_a == name_b and x >= y:
                        continue
                    assert not overlaps(a, c), f"{name_a} {a} overlaps {name_b} {c} at {width} px"
    narrowest = min(r[2] - r[0] for r in b["reply"])
    assert narrowest >= 240, f"reply text squeezed to {narrowest:.0f} px at {width} px"


def test_a_passive_view_opens_at_full_size_with_its_name_and_the_keys_move_between_views(server, run_folder, sized):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    d = sized
    d.set_window_size(1280, 1000)
    d.get(f"{server}/run/0/episode?record={requests.utils.quote(records(run_folder)['oracle/passive'])}")
    names = [e.text for e in d.find_elements(By.CSS_SELECTOR, "#step-0 .view-name")]
    assert names == ["topdown", "side", "front_side_45", "side_top_45", "oblique_45"]
    d.find_element(By.CSS_SELECTOR, "#step-0 img.model-image").click()
    big = d.find_element(By.ID, "viewer-image")
    wait_for(d, lambda d: js(d, "return arguments[0].complete && arguments[0].naturalWidth", big) > 0, "full image")
    assert d.find_element(By.ID, "viewer").is_displayed()
    natural = js(d, "return [arguments[0].naturalWidth, arguments[0].naturalHeight]", big)
    assert [big.size["width"], big.size["height"]] == natural  # full size: one image pixel per CSS pixel
    assert natural[0] > 160  # larger than the thumbnail it was opened from
    assert d.find_element(By.ID, "viewer-name").text == "topdown"
    body = d.find_element(By.TAG_NAME, "body")
    body.send_keys(Keys.ARROW_RIGHT)
    assert d.find_element(By.ID, "viewer-name").text == "side"
    body.send_keys(Keys.ARROW_LEFT, Keys.ARROW_LEFT)  # wraps to the last image of the page
    assert d.find_element(By.ID, "viewer-name").text.startswith("recording view")
    body.send_keys(Keys.ESCAPE)
    assert not d.find_element(By.ID, "viewer").is_displayed()


@pytest.mark.parametrize("width", [800, 1280])
def test_labels_are_inert_until_the_annotator_id_is_valid_and_the_status_stays_in_view(
    server, run_folder, sized, width
):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    d = sized
    d.set_window_size(width, 900)
    d.get(f"{server}/run/0/episode?record={requests.utils.quote(records(run_folder)['random/active'])}")
    box = d.find_element(By.ID, "annotator")
    box.clear()
    box.send_keys("not valid!", Keys.TAB)
    status = d.find_element(By.ID, "save-status")
    wait_for(d, lambda d: "Not a valid annotator id" in status.text, "the refusal")
    assert set(js(d, "return [...document.querySelectorAll('#label-fields label')].map(l => l.inert)")) == {True}
    radio = d.find_element(By.CSS_SELECTOR, "input[name=label-TL][value='1']")
    js(d, "arguments[0].scrollIntoView({block: 'center'})", radio)
    try:
        radio.click()
    except Exception:  # an inert element may refuse the click outright: either way nothing is chosen
        pass
    assert not radio.is_selected()
    for where in ("0", "document.body.scrollHeight / 2", "document.body.scrollHeight"):
        js(d, f"window.scrollTo(0, {where})")
        top, bottom = js(d, "const r = arguments[0].getBoundingClientRect(); return [r.top, r.bottom]", status)
        assert 0 <= top and bottom <= js(d, "return innerHeight"), f"the status is out of view at {width} px"
    box.clear()
    box.send_keys("w2", Keys.TAB)
    wait_for(d, lambda d: "no labels of w2" in status.text or "loaded labels of w2" in status.text, "armed")
    assert set(js(d, "return [...document.querySelectorAll('#label-fields label')].map(l => l.inert)")) == {False}


def test_the_index_lists_each_run_with_model_counts_success_and_date(server):
    page = requests.get(f"{server}/", timeout=10).text
    assert "oracle, random" in page and "2/3 (66.7%)" in page
    assert "<th>started</th>" in page


def test_a_folder_of_runs_is_its_runs_and_an_unreadable_outcome_file_is_named(run_folder, hostile_run, tmp_path):
    import shutil

    from fastapi.testclient import TestClient

    from vabench.review.app import create_app

    copy = tmp_path / "results" / "copied"
    shutil.copytree(run_folder / "outcomes", copy / "outcomes")
    bad = sorted((copy / "outcomes").rglob("*.parquet"))[0]
    bad.write_bytes(b"PAR1 torn")
    client = TestClient(create_app([run_folder.parent, tmp_path / "results"]), base_url="http://127.0.0.1")
    roots = [r.name for r in client.app.state.store.roots]
    assert {"review", "hostile", "copied"} <= set(roots)
    i = roots.index("copied")
    page = client.get(f"/run/{i}")
    assert page.status_code == 200 and bad.relative_to(copy).as_posix() in page.text
    assert "could not be read" in page.text
    assert client.get(f"/run/{i}/api/rows").json()["total"] == 2
    assert "1 unreadable" in client.get("/").text


# -- starting: the port ------------------------------------------------------------------------


def test_a_busy_port_gets_one_line_naming_it_and_the_fix(run_folder):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        out = subprocess.run([sys.executable, "-m", "vabench.review", str(run_folder), "--port", str(port)],
                             capture_output=True, text=True, env=ENV, timeout=60)  # fmt: skip
    assert out.returncode == 2 and "http://" not in out.stdout  # no URL printed for a server that never ran
    assert len(out.stderr.splitlines()) == 1 and "Traceback" not in out.stderr
    assert f"port {port}" in out.stderr and "--port 0" in out.stderr


# -- no sideways scrolling at 800 to 1920 px -----------------------------------------------------

SIDEWAYS = """
const page = document.documentElement, box = document.querySelector('.scroll');
return {page: [page.scrollWidth, page.clientWidth], table: box ? [box.scrollWidth, box.clientWidth] : [0, 0]};
"""


@pytest.mark.parametrize("width", [800, 1280, 1920])
def test_the_run_and_episode_pages_fit_the_window_without_sideways_scrolling(server, run_folder, sized, width):
    from selenium.webdriver.common.by import By

    d = sized
    d.set_window_size(width, 1000)
    d.get(f"{server}/run/1")  # the replayed run: its model name (replay:oracle) is the longer one
    wait_for(d, lambda d: d.find_elements(By.CSS_SELECTOR, "#rows tr"), "the rows")
    fit = js(d, SIDEWAYS)
    assert fit["page"][0] <= fit["page"][1], f"the run page scrolls sideways at {width} px: {fit}"
    assert fit["table"][0] <= fit["table"][1], f"the run table scrolls sideways at {width} px: {fit}"
    assert js(d, "return document.querySelector('#rows td[data-key=task]').getClientRects().length")  # still shown
    d.get(f"{server}/run/0/episode?record={requests.utils.quote(records(run_folder)['oracle/passive'])}")
    fit = js(d, SIDEWAYS)
    assert fit["page"][0] <= fit["page"][1], f"the episode page scrolls sideways at {width} px: {fit}"


# -- the episode video's poster ------------------------------------------------------------------


def test_the_episode_video_shows_its_first_frame_as_a_poster_that_is_not_black(server, run_folder, sized):
    """Without a poster a browser shows the video's black background until it has decoded a frame,
    which ``preload=metadata`` does not oblige it to do (and a 1920 px recording takes longest)."""
    import numpy as np
    from PIL import Image

    d = sized
    d.set_window_size(1920, 1080)
    rec = records(run_folder)["oracle/active"]
    d.get(f"{server}/run/0/episode?record={requests.utils.quote(rec)}")
    poster = js(d, "return document.getElementById('video').poster")
    assert poster.startswith(f"{server}/run/0/file/"), f"no poster: {poster!r}"
    got = requests.get(poster, timeout=10)
    assert got.status_code == 200 and got.headers["content-type"] == "image/jpeg"
    pixels = np.asarray(Image.open(io.BytesIO(got.content)).convert("L"))
    assert pixels.mean() > 40 and (pixels > 100).mean() > 0.25, "the poster is (nearly) black"
    first = sorted((run_folder / Path(rec).parent / "recording").glob("step_*.jpg"))[0]
    assert got.content == first.read_bytes()  # the frame the video starts on
    wait_for(d, lambda d: js(d, "return document.getElementById('video').readyState") >= 1, "video metadata")
    size = js(d, "const v = document.getElementById('video'); return [v.videoWidth, v.videoHeight]")
    assert list(pixels.shape[::-1]) == size  # the poster has the video's size: no jump when it plays


# -- shared on a network: token, Host, Origin -----------------------------------------------------


@pytest.fixture(scope="module")
def shared(run_folder):
    """The app listening on every interface, as ``--host 0.0.0.0`` shares it: (base URL through
    127.0.0.1, its token, the lines it printed). Asked through loopback here, answered the same."""
    with serving(str(run_folder), "--host", "0.0.0.0", "--port", "0", lines=2) as (proc, lines):
        url = URL.search(lines[1])
        assert url and url["host"] == socket.gethostname(), lines  # a name colleagues can type
        token = re.fullmatch(r"/\?token=([A-Za-z0-9_-]+)", url["rest"])[1]
        yield f"http://127.0.0.1:{url['port']}", token, lines


def test_listening_beyond_loopback_says_who_can_reach_it_and_prints_a_token_url(shared):
    base, token, (who, url) = shared
    assert "every network interface" in who and "anyone who can reach it" in who and "token" in who
    assert len(token) >= 32 and f"?token={token}" in url


def _label(run_folder: Path, who: str) -> str:
    return json.dumps({"record": records(run_folder)["random/active"], "annotator": who, "labels": {"TL": 1}})


@pytest.mark.parametrize(
    "case, status",
    [
        ("no token", 401),
        ("no token, a write", 401),
        ("no token, a static file", 401),
        ("wrong token in the URL", 403),
        ("wrong token in the cookie", 403),
        ("wrong Bearer token", 403),
        ("another Host (DNS rebinding)", 400),
        ("a write from another site", 403),
        ("a write from a sandboxed page", 403),
    ],
)
def test_a_shared_app_refuses_requests_without_its_token_host_or_origin(shared, run_folder, case, status):
    base, token, _ = shared
    cookie = f"vabench-review-{base.rsplit(':', 1)[1]}"
    ok = {"Cookie": f"{cookie}={token}"}
    write = {"Content-Type": "application/json", "Origin": base}
    asks = {
        "no token": ("GET", "/run/0", {}),
        "no token, a write": ("POST", "/run/0/api/labels", write),
        "no token, a static file": ("GET", "/static/run.js", {}),
        "wrong token in the URL": ("GET", f"/run/0?token={token[:-1]}x", {}),
        "wrong token in the cookie": ("GET", "/run/0/api/rows", {"Cookie": f"{cookie}=not-{token}"}),
        "wrong Bearer token": ("GET", "/run/0/api/rows", {"Authorization": f"Bearer {token}x"}),
        "another Host (DNS rebinding)": ("GET", "/run/0", {**ok, "Host": f"evil.example:{base.rsplit(':', 1)[1]}"}),
        "a write from another site": ("POST", "/run/0/api/labels", {**ok, **write, "Origin": "http://evil.example"}),
        "a write from a sandboxed page": ("POST", "/run/0/api/labels", {**ok, **write, "Origin": "null"}),
    }  # fmt: skip
    method, path, headers = asks[case]
    before = tree(run_folder)
    r = requests.request(method, base + path, headers=headers, data=_label(run_folder, "evil"), timeout=10,
                         allow_redirects=False)  # fmt: skip
    assert r.status_code == status and r.json()["error"], (case, r.status_code, r.text)
    assert token not in r.text and "set-cookie" not in r.headers
    assert tree(run_folder) == before  # nothing written
    if status == 401:
        assert r.headers["www-authenticate"].startswith("Bearer")


def test_a_shared_app_answers_its_token_from_the_url_the_cookie_or_a_bearer_header(shared, run_folder):
    base, token, _ = shared
    port = base.rsplit(":", 1)[1]
    r = requests.get(f"{base}/run/0/api/rows?limit=2&token={token}", allow_redirects=False, timeout=10)
    assert r.status_code == 303 and r.headers["location"] == "/run/0/api/rows?limit=2"  # the token leaves the URL
    assert f"vabench-review-{port}={token}" in r.headers["set-cookie"]
    assert "httponly" in r.headers["set-cookie"].lower() and "samesite=lax" in r.headers["set-cookie"].lower()
    with requests.Session() as browser_like:
        assert browser_like.get(f"{base}/?token={token}", timeout=10).url == f"{base}/run/0"  # redirected, cookie kept
        assert browser_like.get(f"{base}/run/0/api/rows", timeout=10).json()["total"] == 3
    bearer = {"Authorization": f"Bearer {token}"}
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"{socket.gethostname()}:{port}", f"[::1]:{port}"):
        assert requests.get(f"{base}/run/0", headers={**bearer, "Host": host}, timeout=10).status_code == 200, host
    saved = requests.post(f"{base}/run/0/api/labels", data=_label(run_folder, "remote1"), timeout=10,
                          headers={**bearer, "Content-Type": "application/json", "Origin": base})  # fmt: skip
    assert saved.status_code == 200 and saved.json()["annotator"] == "remote1"


def test_a_token_given_with_the_option_is_needed_on_loopback_too_and_never_echoed(run_folder):
    token = "a-token-of-our-own-1234"
    with serving(str(run_folder), "--port", "0", "--token", token) as (proc, (line,)):
        assert token not in line and "?token=" not in line and "--token" in line
        base = URL.search(line)[0].rstrip("/")
        assert requests.get(f"{base}/run/0", timeout=10).status_code == 401
        assert requests.get(f"{base}/run/0", headers={"Authorization": f"Bearer {token}"}, timeout=10).ok


@pytest.mark.parametrize(
    "args, message",
    [
        (["--token", "short"], "--token must be 16 to 256"),
        (["--allow-host", "*"], "--allow-host takes a host name"),
        (["--host", "no-such-host.invalid"], "no such address to listen on: --host no-such-host.invalid"),
    ],
)
def test_a_bad_sharing_option_gets_one_line_naming_the_fix(run_folder, args, message):
    out = subprocess.run([sys.executable, "-m", "vabench.review", str(run_folder), "--port", "0", *args],
                         capture_output=True, text=True, env=ENV, timeout=60)  # fmt: skip
    assert out.returncode == 2 and out.stdout == "" and message in out.stderr
    assert len(out.stderr.splitlines()) == 1 and "Traceback" not in out.stderr


def test_a_browser_opens_the_token_url_and_its_cookie_carries_the_pages_reads_and_saves(shared, run_folder, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    base, token, (_, printed) = shared
    d = browser
    d.get(base + URL.search(printed)["rest"])  # the printed URL, through loopback
    wait_for(d, lambda d: d.current_url == f"{base}/run/0", "the run page, the token gone from the address bar")
    wait_for(d, lambda d: d.find_elements(By.CSS_SELECTOR, "#rows tr"), "rows asked of the server with the cookie")
    cookie = d.get_cookie(f"vabench-review-{base.rsplit(':', 1)[1]}")
    assert cookie["value"] == token and cookie["httpOnly"] and cookie["sameSite"] == "Lax"
    assert token not in d.page_source
    d.get(f"{base}/run/0/episode?record={requests.utils.quote(records(run_folder)['random/active'])}")
    first = d.find_element(By.CSS_SELECTOR, "#step-0 img.model-image")
    wait_for(d, lambda d: js(d, "return arguments[0].complete && arguments[0].naturalWidth", first), "an image")
    box = d.find_element(By.ID, "annotator")
    box.clear()
    box.send_keys("remote2", Keys.TAB)
    status = d.find_element(By.ID, "save-status")
    wait_for(d, lambda d: "labels of remote2" in status.text, "the annotator's labels read")
    d.find_element(By.CSS_SELECTOR, "input[name=gate-error][value='false']").click()  # a save, from this origin
    wait_for(d, lambda d: status.text.startswith("saved"), "the label saved")
    assert (run_folder / L.ANNOTATIONS / "remote2.jsonl").is_file()
    d.delete_all_cookies()
    d.get(f"{base}/run/0")
    assert "needs its token" in d.find_element(By.TAG_NAME, "body").text


# -- judges beside people: disagreements first, adjudicated as a label like any other ------------

JUDGE = "judge-scripted"  # a judge of three samples, its labels planted as `python -m vabench.judge` writes them


@pytest.fixture(scope="module")
def judged_run(run_folder, tmp_path_factory) -> Path:
    """A copy of the run (no labels) where a judge labelled every episode and people two of them:
    on oracle/active people split 1-1 on SR (a tie: majority 0) where the judge says 1; on
    random/active one person says SR 1 where the judge says 0; oracle/passive is labelled by the judge
    alone, and the calibration subset (the real ``calibrate``) picks it for people."""
    import shutil

    from vabench.judge import subset

    copy = tmp_path_factory.mktemp("judged") / "judged"
    shutil.copytree(run_folder, copy, ignore=shutil.ignore_patterns(L.ANNOTATIONS, "link"))
    rec = records(copy)
    a, b, c = rec["oracle/active"], rec["oracle/passive"], rec["random/active"]
    for k in (1, 2, 3):
        for record, labels, steps in [
            (a, {"TL": 1, "SR": 1, "MS": 1 if k < 3 else 0}, {"TL": 1, "SR": 2, "MS": 3}),
            (b, {"TL": 1}, {"TL": 1}),
            (c, {"TL": 0, "SR": 0}, {"TL": 1, "SR": 2}),
        ]:
            L.append(copy, {"record": record, "annotator": f"{JUDGE}-{k}", "gates": {"error": False},
                            "labels": labels, "steps": steps})  # fmt: skip
    for who, record, labels in [
        ("p1", a, {"TL": 1, "SR": 0, "MS": 1}),
        ("p2", a, {"TL": 1, "SR": 1, "MS": 1}),
        ("p1", c, {"TL": 0, "SR": 1}),
    ]:
        L.append(copy, {"record": record, "annotator": who, "labels": labels})
    assert len(subset(copy, n=3)) == 3
    return copy


def _items(client, **params) -> list[tuple[str, str, str]]:
    """(status, record, criterion) of the judge page's rows, in order."""
    page = client.get("/run/0/judge", params=params)
    assert page.status_code == 200, page.text
    rows = re.findall(r'data-record="([^"]+)" data-criterion="(\w+)" data-status="([^"]+)"', page.text)
    return [(s, r, c) for r, c, s in rows]


def test_the_judge_page_lists_disagreements_first_as_the_agreement_table_counts_them(judged_run):
    from fastapi.testclient import TestClient

    from vabench.analysis.judging import judge_agreement
    from vabench.analysis.load import load_runs
    from vabench.review.app import create_app

    rec = records(judged_run)
    a, b, c = rec["oracle/active"], rec["oracle/passive"], rec["random/active"]
    client = TestClient(create_app([judged_run]), base_url="http://127.0.0.1")
    assert 'id="judge-link"' in client.get("/run/0").text
    got = _items(client)
    assert got[:3] == [("disagree", a, "SR"), ("disagree", c, "SR"), ("to label", b, "TL")]  # a: least certain
    assert sorted(got[3:]) == sorted([("agree", a, "TL"), ("agree", a, "MS"), ("agree", c, "TL")])
    table = judge_agreement(load_runs(judged_run), judged_run).set_index("criterion")
    for crit in L.CRITERIA:  # the same items as the table's off-diagonal confusion counts
        row = table.loc[crit]
        assert sum(1 for s, _, x in got if s == "disagree" and x == crit) == row["j1_h0"] + row["j0_h1"], crit
        assert sum(1 for s, _, x in got if s == "agree" and x == crit) == row["j1_h1"] + row["j0_h0"], crit
    assert _items(client, status="to label") == [("to label", b, "TL")]
    assert client.get("/run/0/judge", params={"status": "maybe"}).status_code == 400

    # the episode's panel: the judge's label, the steps its samples cite (cards) and each person's label
    items = {x["criterion"]: x for x in client.get("/run/0/api/judged", params={"record": a}).json()}
    sr, ms = items["SR"], items["MS"]
    assert (sr["judge"], sr["judge_label"], sr["judge_votes"], sr["status"]) == (JUDGE, 1, "3/3", "disagree")
    assert sr["steps"] == [{"step": 2, "card": 1}] and sr["people"] == {"p1": 0, "p2": 1} and sr["people_label"] == 0
    assert (ms["judge_label"], ms["judge_votes"], ms["status"]) == (1, "2/3", "agree")
    assert ms["steps"] == [{"step": 3, "card": 2}]  # the majority's step, not the dissenting sample's
    page = client.get(f"/run/0/episode?record={a}").text
    assert 'id="criterion-SR"' in page and 'id="step-1"' in page

    # an adjudication is a person's label, saved as any label: it breaks the tie and the item agrees
    before = tree(judged_run)
    saved = client.post("/run/0/api/labels", json={"record": a, "annotator": "p3", "labels": {"SR": 1}})
    assert saved.status_code == 200
    changed = {k for k in set(before) | set(tree(judged_run)) if before.get(k) != tree(judged_run).get(k)}
    assert changed == {f"{L.ANNOTATIONS}/p3.jsonl"}
    assert ("agree", a, "SR") in _items(client) and _items(client, status="disagree") == [("disagree", c, "SR")]


@pytest.fixture(scope="module")
def judged_server(judged_run):
    with serving(str(judged_run), "--port", "0") as (proc, (line,)):
        yield f"http://127.0.0.1:{int(URL.search(line)['port'])}"


@pytest.mark.parametrize("width", [800, 1400])
def test_a_person_adjudicates_a_disagreement_from_the_judge_page(judged_server, judged_run, sized, width):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    d, c, who = sized, records(judged_run)["random/active"], f"adj{width}"
    # this person first sided with people (SR 1): the people's majority is 1, the judge says 0
    first = {"record": c, "annotator": who, "labels": {"SR": 1}}
    assert requests.post(f"{judged_server}/run/0/api/labels", json=first, timeout=10).status_code == 200
    d.set_window_size(width, 1000)
    d.get(f"{judged_server}/run/0/judge")
    fit = js(d, SIDEWAYS)
    assert fit["page"][0] <= fit["page"][1], f"the judge page scrolls sideways at {width} px"
    row = d.find_element(By.CSS_SELECTOR, f'#items tr[data-record="{c}"][data-criterion="SR"]')
    assert row.get_attribute("data-status") == "disagree"
    assert js(d, "return document.querySelector('#items tbody tr').dataset.status") == "disagree"  # first
    row.find_element(By.LINK_TEXT, "adjudicate").click()
    wait_for(d, lambda d: "/episode" in d.current_url, "the episode page")
    assert "asked" in d.find_element(By.ID, "criterion-SR").get_attribute("class")  # the criterion asked about
    verdict = d.find_element(By.CSS_SELECTOR, ".verdicts[data-for=SR]")
    wait_for(d, lambda d: verdict.text, "the judge's verdict beside the criterion")
    assert verdict.text.startswith(f"{JUDGE} 0 (0/3) at step 2 · people 1") and "disagree" in verdict.text
    cited = verdict.find_element(By.LINK_TEXT, "step 2")
    js(d, "arguments[0].scrollIntoView({block: 'center'})", cited)  # clear of the sticky bars
    cited.click()  # the cited step: the card of action 2
    assert d.find_element(By.CSS_SELECTOR, ".step.current").get_attribute("id") == "step-1"
    box = d.find_element(By.ID, "annotator")
    box.clear()
    box.send_keys(who, Keys.TAB)
    status = d.find_element(By.ID, "save-status")
    wait_for(d, lambda d: f"loaded labels of {who}" in status.text, "the adjudicator's labels loaded")
    d.find_element(By.CSS_SELECTOR, "input[name=label-SR][value='0']").click()  # now sides with the judge
    wait_for(d, lambda d: "saved" in status.text, "the adjudication saved")
    wait_for(d, lambda d: "agree" == js(d, "return document.querySelector('.verdicts[data-for=SR] .verdict')"
                                           ".dataset.status"), "the item agrees now")  # fmt: skip
    saved = [json.loads(x) for x in (judged_run / L.ANNOTATIONS / f"{who}.jsonl").read_text().splitlines()]
    assert saved[-1]["labels"]["SR"] == 0 and saved[-1]["record"] == c
