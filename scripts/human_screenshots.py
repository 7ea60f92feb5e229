"""Screenshots of the human player's page (docs/human.md): an active and a passive episode, a few of
the oracle's commands in (so the feedback shows), at each window size.

    .venv/bin/python -m scripts.human_screenshots [--out /tmp/human-shots] [--sizes 1280x800 1920x1080 820x1180]

Starts a study (``python -m vabench.launch model=human human.operators=2 protocol=both``, one seed of
grasp_single_cube, render=small) in a scratch folder: op1 takes the active episode, op2 the passive one.
Writes ``<protocol>-<width>x<height>.png`` under ``--out`` and stops the study (Ctrl-C).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import requests
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.ui import WebDriverWait

from vabench.envs import EnvConfig, VABenchEnv
from vabench.human.serve import printed_urls

TASK, SEED, STEPS = "grasp_single_cube", 1000, 3
LOADED = "return [...document.images].every(i => i.complete && i.naturalWidth)"


def oracle(n: int) -> list[dict]:
    """The first ``n`` of the privileged expert's commands for the episode (the same physics whatever the render)."""
    env = VABenchEnv(EnvConfig(render=False))
    env.reset(TASK, SEED, "active")
    out = []
    for action in env.expert():
        out.append(action)
        if len(out) == n or env.step(action).done:
            break
    env.close()
    return out


def study(results: Path) -> tuple[subprocess.Popen, dict[str, str]]:
    words = ["model=human", "human.operators=2", "human.port=0", f"tasks=[{TASK}]", "seeds=1", "protocol=both"]
    words += ["render=small", "ray.address=none", "recording.video=false", "run_id=shots", f"results_dir={results}"]
    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}
    cmd = [sys.executable, "-m", "vabench.launch", *words]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
    urls = printed_urls(proc.stdout)
    if not urls:
        raise SystemExit(f"the study did not start (exit {proc.wait()})")
    return proc, urls


def browser() -> webdriver.Chrome:
    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--hide-scrollbars"):
        options.add_argument(arg)
    options.binary_location = "/usr/bin/chromium"
    return webdriver.Chrome(options=options, service=Service("/usr/bin/chromedriver"))


def shoot(d, url: str, name: str, sizes: list[tuple[int, int]], out: Path) -> list[Path]:
    d.get(url)
    WebDriverWait(d, 300).until(lambda d: d.find_element("id", "play").get_attribute("data-phase") == "playing")
    made = []
    for w, h in sizes:
        d.set_window_size(w, h)
        WebDriverWait(d, 60).until(lambda d: d.execute_script(LOADED))
        path = out / f"{name}-{w}x{h}.png"
        d.save_screenshot(str(path))
        made.append(path)
    return made


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("/tmp/human-shots"))
    ap.add_argument("--sizes", nargs="+", default=["1280x800", "1920x1080", "820x1180"])
    args = ap.parse_args()
    sizes = [tuple(int(v) for v in s.split("x")) for s in args.sizes]
    args.out.mkdir(parents=True, exist_ok=True)
    commands = oracle(STEPS)
    with tempfile.TemporaryDirectory() as scratch:
        proc, urls = study(Path(scratch))
        d = browser()
        try:
            for operator, protocol in (("op1", "active"), ("op2", "passive")):
                base = urls[operator].split("?")[0]
                requests.get(f"{base}/api/state", timeout=300)  # takes the episode
                for command in commands:
                    requests.post(f"{base}/api/answer", json=command, timeout=120)
                for path in shoot(d, urls[operator], protocol, sizes, args.out):
                    print(path)
        finally:
            d.quit()
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=120)


if __name__ == "__main__":
    main()
