"""Screenshots of the review app for the docs (docs/review.md): the run page and an episode page, at several
window widths within the supported 800-2560 px (below about 1100 px the layout changes).

    .venv/bin/python scripts/review_screenshots.py RUN_FOLDER [--out docs/review] [--record REC]
                                                   [--widths 1400 1920 800]

Serves RUN_FOLDER with ``python -m vabench.review`` and photographs it in Debian's headless
Chromium (scripts/setup.sh installs it). The episode is ``--record`` or the first failed one.
The first width writes ``run-page.png`` and ``episode-page.png``, every other ``run-page-<width>.png``
and ``episode-page-<width>.png``. A run a judge labelled (``_annotations/judge-*.jsonl``) also gets its
disagreement view, ``judge-page[-<width>].png``, and the episode of its first item opened at that
criterion, the judge's label beside people's, ``judge-episode[-<width>].png``.
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

import pandas as pd
import requests
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.ui import WebDriverWait

from vabench.analysis.labels import JUDGE_PREFIX
from vabench.results.layout import ANNOTATIONS


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_folder", type=Path)
    ap.add_argument("--out", type=Path, default=Path("docs/review"))
    ap.add_argument("--record", help="the episode to show (its record path); default: the first failure")
    ap.add_argument("--annotator", help="open the annotation panel as this annotator (their saved labels show)")
    ap.add_argument("--widths", type=int, nargs="+", default=[1400, 1920, 800], help="window widths (CSS px)")
    args = ap.parse_args()
    df = pd.read_parquet(args.run_folder)
    record = args.record or df.sort_values("success")["record"].iloc[0]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "vabench.review", str(args.run_folder), "--port", str(port)])
    url = f"http://127.0.0.1:{port}"
    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1050"):
        options.add_argument(arg)
    written = []
    options.binary_location = "/usr/bin/chromium"
    driver = webdriver.Chrome(options=options, service=Service("/usr/bin/chromedriver"))
    try:
        deadline = time.monotonic() + 60
        while True:  # the server prints its URL before it binds
            try:
                requests.get(url, timeout=30)  # the first request may (re)build the run's outcome table
                break
            except (requests.ConnectionError, requests.Timeout):
                if server.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("the review server did not come up") from None
                time.sleep(0.2)
        args.out.mkdir(parents=True, exist_ok=True)
        if args.annotator:
            driver.get(url)
            driver.execute_script("localStorage.setItem('vabench.annotator', arguments[0])", args.annotator)
        for i, width in enumerate(args.widths):
            driver.set_window_size(width, 1050 if width > 1100 else 900)
            tail = "" if i == 0 else f"-{width}"
            written += shoot(driver, url, record, args.out, tail)
            if any((args.run_folder / ANNOTATIONS).glob(f"{JUDGE_PREFIX}*.jsonl")):
                written += shoot_judge(driver, url, args.out, tail)
        print("wrote " + ", ".join(map(str, written)))
    finally:
        driver.quit()
        server.terminate()


def shoot(driver, url: str, record: str, out: Path, tail: str) -> list[Path]:
    """The run page and the episode page at the window's current size."""
    run_page, episode_page = out / f"run-page{tail}.png", out / f"episode-page{tail}.png"
    driver.get(f"{url}/run/0")
    driver.save_screenshot(str(run_page))
    driver.get(f"{url}/run/0/episode?record={quote(record)}")
    WebDriverWait(driver, 30).until(  # every image loaded and the video's first frame decoded
        lambda d: d.execute_script(
            "return [...document.images].filter(i => i.getBoundingClientRect().top < innerHeight)"
            ".every(i => i.complete)"
            " && (!document.getElementById('video') || document.getElementById('video').readyState >= 2)"
        )
    )
    driver.save_screenshot(str(episode_page))
    return [run_page, episode_page]


def shoot_judge(driver, url: str, out: Path, tail: str) -> list[Path]:
    """The judge page (disagreements first) and its first item's episode, at that criterion."""
    page, episode = out / f"judge-page{tail}.png", out / f"judge-episode{tail}.png"
    driver.get(f"{url}/run/0/judge")
    driver.save_screenshot(str(page))
    first = driver.execute_script(
        "const a = document.querySelector('#items tbody tr .episode-link'); return a && a.href"
    )
    if not first:
        return [page]
    driver.get(first)
    WebDriverWait(driver, 30).until(  # the judges' verdicts asked of the server and shown
        lambda d: d.execute_script("return document.querySelectorAll('.verdict').length > 0")
    )
    driver.save_screenshot(str(episode))
    return [page, episode]


if __name__ == "__main__":
    main()
