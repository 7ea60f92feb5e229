"""Screenshots of the review app for the README: the run page and an episode page.

    .venv/bin/python scripts/review_screenshots.py RUN_FOLDER [--out docs/review] [--record REC]

Serves RUN_FOLDER with ``python -m vabench.review`` and photographs it in Debian's headless
Chromium (scripts/setup.sh installs it). The episode is ``--record`` or the first failed one.
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_folder", type=Path)
    ap.add_argument("--out", type=Path, default=Path("docs/review"))
    ap.add_argument("--record", help="the episode to show (its record path); default: the first failure")
    ap.add_argument("--annotator", help="open the annotation panel as this annotator (their saved labels show)")
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
    options.binary_location = "/usr/bin/chromium"
    driver = webdriver.Chrome(options=options, service=Service("/usr/bin/chromedriver"))
    try:
        deadline = time.monotonic() + 60
        while True:  # the server prints its URL before it binds
            try:
                requests.get(url, timeout=2)
                break
            except requests.ConnectionError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("the review server did not come up") from None
                time.sleep(0.2)
        args.out.mkdir(parents=True, exist_ok=True)
        driver.get(f"{url}/run/0")
        driver.save_screenshot(str(args.out / "run-page.png"))
        if args.annotator:
            driver.execute_script("localStorage.setItem('vabench.annotator', arguments[0])", args.annotator)
        driver.get(f"{url}/run/0/episode?record={quote(record)}")
        WebDriverWait(driver, 30).until(  # every image loaded and the video's first frame decoded
            lambda d: d.execute_script(
                "return [...document.images].filter(i => i.getBoundingClientRect().top < innerHeight)"
                ".every(i => i.complete)"
                " && (!document.getElementById('video') || document.getElementById('video').readyState >= 2)"
            )
        )
        driver.save_screenshot(str(args.out / "episode-page.png"))
        print(f"wrote {args.out / 'run-page.png'} and {args.out / 'episode-page.png'}")
    finally:
        driver.quit()
        server.terminate()


if __name__ == "__main__":
    main()
