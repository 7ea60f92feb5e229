"""The results site as a reader meets it: two small real runs (the offline oracle, both protocols,
and the random agent, at render=small), ``python -m vabench.site`` over them, and Debian's headless
Chromium (through its WebDriver) opening the pages from disk at 800, 1280 and 1920 px: the
leaderboard's numbers, links that lead somewhere, no sideways scrolling, an episode's decisions and
verdict, a tampered row marked, model text shown and never run, and media linked, copied or left out."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pandas as pd
import pytest

from tests import test_review
from vabench.results.recordfile import VIDEO_NAME, Event, read_events

pytestmark = pytest.mark.xdist_group("site")  # one pair of runs and one chromium for the module
XSS = "<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\">"
ORACLE_A = "oracle | active | summary none | render small (privileged)"
ORACLE_P = "oracle | passive | summary none | render small (privileged)"
RANDOM = "random | active | summary none | render small"


def run(results: Path, run_id: str, *overrides: str) -> Path:
    """grasp_single_cube x 2 seeds, in process, small images, recording views and videos on."""
    from tests.test_launch import composed
    from vabench.run.config.run import from_config
    from vabench.run.driver import Driver

    cfg = composed(f"results_dir={results}", f"run_id={run_id}", "tasks=[grasp_single_cube]", "seeds=2",
                   "render=small", "ray.address=none", *overrides)  # fmt: skip
    Driver(from_config(cfg, results / run_id), log=lambda *_: None, progress=False).execute()
    return results / run_id


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    results = tmp_path_factory.mktemp("results")
    run(results, "oracle", "protocol=both")
    run(results, "random", "model=random")
    return results


chromium = test_review.browser  # the review app's fixture: Debian's headless Chromium, one per module


def site_cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vabench.site", *map(str, args)], capture_output=True, text=True)


@pytest.fixture(scope="module")
def site(results, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site") / "site"
    done = site_cli(results, "--out", out, "--paired", "oracle active", "random")
    assert done.returncode == 0, done.stderr
    assert "pages (6 episodes)" in done.stdout and str(out / "index.html") in done.stdout
    return out


def js(driver, script: str, *args):
    return driver.execute_script(script, *args)


def open_page(driver, path: Path) -> None:
    driver.get(path.as_uri())
    assert js(driver, "return document.readyState") == "complete"


def episode_pages(site: Path) -> list[Path]:
    return sorted(site.glob("e/**/*.html"))


def page_of(site: Path, condition_word: str, seed: int) -> Path:
    return next(p for p in episode_pages(site) if condition_word in str(p) and f"/s{seed}-" in str(p))


# -- the numbers -----------------------------------------------------------------------------------


def test_the_leaderboard_shows_the_runs_numbers(site, chromium):
    from selenium.webdriver.common.by import By

    open_page(chromium, site / "index.html")
    rows = [[td.text for td in tr.find_elements(By.TAG_NAME, "td")] for tr in
            chromium.find_elements(By.CSS_SELECTOR, "table.board tbody tr")]  # fmt: skip
    by = {r[1]: r for r in rows}
    assert set(by) == {ORACLE_A, ORACLE_P, RANDOM} and by[RANDOM][0] == "3"
    # the oracle solves both seeds: 2/2, Wilson 95% [34.2, 100.0]; random solves none: [0.0, 65.8]
    assert by[ORACLE_A][6] == by[ORACLE_P][6] == "2/2 · 100.0% [34.2, 100.0]"
    assert by[RANDOM][6] == "0/2 · 0.0% [0.0, 65.8]"
    assert by[ORACLE_A][2] == "100.00 ± –" and by[RANDOM][2] == "0.00 ± –" and by[RANDOM][4] == "–"
    assert by[ORACLE_A][5] == by[RANDOM][5] == "1/0/1"
    # random against the oracle ranked above it, on the same two seeds
    assert by[RANDOM][7] == "-100.0 pp [-100.0, -100.0] (2 pairs)" and by[ORACLE_A][7] == "–"
    assert by[ORACLE_P][7] == "0.0 pp [0.0, 0.0] (2 pairs)"
    assert by[ORACLE_A][10] == "$0.0000"
    costs = chromium.find_element(By.ID, "costs").text
    assert "random | active | summary none | render small 2 0" in costs
    paired = chromium.find_element(By.ID, "paired").text
    assert f"Paired difference on shared seeds: {RANDOM} vs {ORACLE_A}" in paired
    runs = chromium.find_element(By.ID, "runs").text
    assert runs.count("rows match their records") == 2 and "4/4 rows match" in runs and "2/2 rows match" in runs


def test_tasks_tables_and_figures_come_from_the_analysis(site, results):
    from vabench.analysis import available_tables, load_runs

    tables = available_tables(load_runs(results))
    shown = (site / "tables.html").read_text()
    for frame in tables.values():
        assert frame.attrs["title"].replace("&", "&amp;") in shown
    assert {p.stem for p in (site / "tables").glob("*.csv")} == set(tables)
    costs = pd.read_csv(site / "tables" / "costs.csv")
    assert costs.loc[costs["condition"] == RANDOM, "model_calls"].item() == 100  # 2 episodes x 50 calls
    assert {p.name for p in (site / "figures").iterdir()} >= {"success_bars.png", "success_heatmap.png"}
    tasks = (site / "tasks.html").read_text()
    assert "grasp_single_cube" in tasks and "0/2 · 0.0% [0.0, 65.8]" in tasks


# -- the chromium: every width, every link --------------------------------------------------------


def local_targets(driver) -> list[str]:
    return js(driver, "return [...document.querySelectorAll('a[href], img[src], video[src], link[href]')]"
                      ".map(e => e.href || e.src)")  # fmt: skip


def test_pages_open_from_disk_links_lead_somewhere_and_nothing_scrolls_sideways(site, chromium):
    pages = [site / "index.html", site / "tasks.html", site / "tables.html", site / "runs" / "0.html"]
    pages += [next(site.glob("c/*.html")), next(site.glob("c/*/*.html")), page_of(site, "oracle-passive", 1000)]
    seen: set[str] = set()
    try:
        for width in (800, 1280, 1920):
            chromium.set_window_size(width, 1000)
            for page in pages:
                open_page(chromium, page)
                assert js(chromium, "return document.documentElement.scrollWidth <= innerWidth + 1"), (page, width)
                seen |= set(local_targets(chromium))
    finally:
        chromium.set_window_size(1400, 1000)
    assert all(u.startswith("file://") for u in seen), [u for u in seen if not u.startswith("file://")]
    broken = [u for u in seen if not Path(unquote(urlsplit(u).path)).exists()]
    assert broken == []
    assert any(u.endswith(VIDEO_NAME) for u in seen) and any("/frames/" in u for u in seen)


def test_every_page_links_only_to_files_that_exist(site):
    broken = []
    for page in site.rglob("*.html"):
        for url in re.findall(r'(?:href|src)="([^"#]+)', page.read_text()):
            if not (page.parent / unquote(url)).exists():
                broken.append((str(page.relative_to(site)), url))
    assert broken == []


def test_an_episode_page_shows_the_models_decisions_and_the_checkers_verdict(site, results, chromium):
    from selenium.webdriver.common.by import By

    page = page_of(site, "oracle-passive", 1000)
    open_page(chromium, page)
    rows = pd.read_parquet(results / "oracle")
    row = rows[(rows["protocol"] == "passive") & (rows["seed"] == 1000)].iloc[0]
    events = read_events(results / "oracle" / row["record"])
    decisions = [e["label"] for e in events if e["type"] == Event.DECISION]
    shown = [
        d.text.removeprefix("Decision: ").split("\n")[0] for d in chromium.find_elements(By.CSS_SELECTOR, ".decision")
    ]
    assert shown == decisions and len(decisions) == row["steps"]
    assert chromium.find_element(By.ID, "verdict").text == "checker: success"
    assert chromium.find_element(By.ID, "check").text == "row matches its record"
    js(chromium, "for (const i of document.images) i.loading = 'eager'; window.scrollTo(0, document.body.scrollHeight)")
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(chromium, 30).until(lambda d: js(d, "return [...document.images].every(i => i.complete)"))
    assert js(chromium, "return [...document.images].every(i => i.naturalWidth > 0)")
    assert js(chromium, "return document.images.length") > 5 * row["steps"]  # 5 passive views per step, and more
    video = chromium.find_element(By.ID, "video").get_attribute("src")
    assert Path(unquote(urlsplit(video).path)).resolve() == (results / "oracle" / row["record"]).parent / VIDEO_NAME
    nxt = chromium.find_element(By.ID, "next").get_attribute("href")
    assert nxt.endswith("/s1001-r1-a1.html")


# -- what the check finds, hostile text, media -----------------------------------------------------


@pytest.fixture(scope="module")
def tampered(results, tmp_path_factory) -> tuple[Path, Path]:
    """A copy of the random run with a script in one decision's reason (its record no longer matches
    its row), and its site."""
    copy = Path(shutil.copytree(results / "random", tmp_path_factory.mktemp("tampered") / "random"))
    record = copy / pd.read_parquet(copy).sort_values("seed")["record"].iloc[0]
    events = [json.loads(line) for line in record.read_text().splitlines()]
    first = next(e for e in events if e["type"] == Event.DECISION)
    first["reason"] = XSS
    record.write_text("".join(json.dumps(e) + "\n" for e in events))
    out = copy.parent / "site"
    done = site_cli(copy, "--out", out, "--no-figures")
    assert done.returncode == 0, done.stderr
    return copy, out


def test_a_row_that_differs_from_its_record_is_marked(tampered, chromium):
    from selenium.webdriver.common.by import By

    _, site = tampered
    index = (site / "index.html").read_text()
    assert "1 of 2 rows differ from their records" in index
    assert "record digest" in (site / "runs" / "0.html").read_text()
    open_page(chromium, page_of(site, "random", 1000))
    assert chromium.find_element(By.ID, "check").text == "differs from its record"
    reason = chromium.find_element(By.CSS_SELECTOR, ".decision .reason")
    assert reason.text == XSS and chromium.title != "pwned"
    assert not chromium.find_elements(By.CSS_SELECTOR, ".reason script, .reason img")
    assert "row matches its record" in page_of(site, "random", 1001).read_text()


def test_media_copied_make_a_site_that_travels_and_none_leaves_them_out(results, tmp_path):
    out = tmp_path / "copied"
    assert site_cli(results / "random", "--out", out, "--media", "copy", "--no-figures").returncode == 0
    moved = Path(shutil.move(out, tmp_path / "elsewhere"))  # the run folder no longer beside it matters not
    page = page_of(moved, "random", 1000)
    sources = re.findall(r'src="([^"]+)"', page.read_text())
    assert sources and all((page.parent / unquote(s)).resolve().is_relative_to(moved) for s in sources)
    assert all((page.parent / unquote(s)).is_file() for s in sources)
    bare = tmp_path / "bare"
    assert site_cli(results / "random", "--out", bare, "--media", "none", "--no-check").returncode == 0
    text = page_of(bare, "random", 1000).read_text()
    assert "<img" not in text and "--media none" in text and "record not checked" in text
    assert "not checked" in (bare / "index.html").read_text()


def test_lists_are_paged_so_no_page_grows_with_the_study(results, tmp_path):
    out = tmp_path / "paged"
    assert site_cli(results / "oracle", "--out", out, "--page-size", "1", "--no-figures").returncode == 0
    lists = sorted(p.name for p in out.glob("c/*/*.html"))
    assert lists == ["grasp_single_cube-2.html", "grasp_single_cube-2.html", "grasp_single_cube.html",
                     "grasp_single_cube.html"]  # fmt: skip
    second = next(out.glob("c/*/grasp_single_cube-2.html")).read_text()
    assert "page 2 of 2" in second and "s1001-r1-a1.html" in second and "s1000-r1-a1.html" not in second


# -- bad input, and what the site never imports ---------------------------------------------------


def test_bad_input_is_one_line_naming_the_fix(results, tmp_path):
    missing = site_cli(tmp_path / "nowhere", "--out", tmp_path / "out")
    assert missing.returncode == 2 and "not a folder" in missing.stderr and "Traceback" not in missing.stderr
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    taken = site_cli(results / "random", "--out", tmp_path / "mine", "--no-figures")
    assert taken.returncode == 2 and "give a new --out folder" in taken.stderr
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"
    unknown = site_cli(results / "random", "--out", tmp_path / "mine", "--paired", "nobody", "random")
    assert unknown.returncode == 2 and "no rows of condition 'nobody'" in unknown.stderr
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"
    (tmp_path / "empty").mkdir()
    nothing = site_cli(tmp_path / "empty", "--out", tmp_path / "out")
    assert nothing.returncode == 2 and "no outcome rows" in nothing.stderr and "Traceback" not in nothing.stderr


def test_building_imports_no_simulator_ray_agent_or_actor_code(results, tmp_path):
    code = (
        "import sys; from pathlib import Path; from vabench.site import build, Options;"
        f"build([Path({str(results / 'random')!r})], Path({str(tmp_path / 'out')!r}), Options(figures=False));"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('sapien', 'mplib', 'ray', 'litellm') or "
        "m.startswith(('vabench.envs', 'vabench.agents', 'vabench.run.actors', 'vabench.verify.check'))];"
        "assert not bad, bad"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
