"""Screenshots of a results site (``python -m vabench.site``) for docs/site.md: the index and an
episode page, opened from disk (file://) in Debian's headless Chromium, at each window width.

    .venv/bin/python scripts/site_screenshots.py SITE_DIR [--out docs/site] [--widths 800 1920]
                                                [--episode e/.../s1000-r1-a1.html] [--height 1000]

Writes ``<page>-<width>.png`` (the top of the page at that width, as a reader first sees it) and
shrinks each with Pillow (palette PNG) so the images stay small enough to commit.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from PIL import Image
from selenium import webdriver
from selenium.webdriver.chrome.service import Service


def browser(width: int, height: int):
    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", f"--window-size={width},{height}"):
        options.add_argument(arg)
    options.binary_location = "/usr/bin/chromium"
    return webdriver.Chrome(options=options, service=Service("/usr/bin/chromedriver"))


def shrink(path: Path) -> None:
    """A palette PNG of the screenshot (a few tens of KB instead of hundreds)."""
    image = Image.open(path).convert("RGB")
    image.quantize(colors=128, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("site", type=Path)
    ap.add_argument("--out", type=Path, default=Path("docs/site"))
    ap.add_argument("--widths", type=int, nargs="+", default=[800, 1920])
    ap.add_argument("--height", type=int, default=1000)
    ap.add_argument("--episode", help="the episode page to show (relative to the site); default: the first one")
    args = ap.parse_args()
    site = args.site.resolve()
    episode = site / args.episode if args.episode else sorted(site.glob("e/**/*.html"))[0]
    args.out.mkdir(parents=True, exist_ok=True)
    written = []
    for width in args.widths:
        driver = browser(width, args.height)
        try:
            driver.set_window_size(width, args.height)
            for name, page in (("index", site / "index.html"), ("episode", episode)):
                driver.get(page.as_uri())
                driver.execute_script("for (const i of document.images) i.loading = 'eager'")
                path = args.out / f"{name}-{width}.png"
                driver.save_screenshot(str(path))
                shrink(path)
                written.append(f"{path} ({path.stat().st_size // 1024} KiB)")
        finally:
            driver.quit()
    print("wrote " + ", ".join(written))


if __name__ == "__main__":
    main()
