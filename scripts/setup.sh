#!/usr/bin/env bash
# Idempotent set-up for a fresh Debian 12 machine: software Vulkan (Mesa >= 25 from
# bookworm-backports, because Mesa 22's lavapipe lacks a feature SAPIEN 3 needs), Chromium and
# its WebDriver for the review app's browser tests, a virtualenv in .venv, the project in
# editable mode with its dev extras, and the decimated robot meshes in the cache. Safe to run
# again: every step checks first.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv
PY=${PYTHON:-python3}

need_vulkan() {
  # Mesa 22's lavapipe lacks a feature SAPIEN 3 needs; 25 from backports works. (A GPU machine
  # renders on its vendor driver; installing Mesa there as well does no harm.)
  local v
  v=$(dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null || true)
  [[ -z "$v" ]] && return 0
  dpkg --compare-versions "$v" lt 25 && return 0
  return 1
}

if need_vulkan; then
  if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; else SUDO=; fi
  echo "[setup] installing Mesa Vulkan drivers from bookworm-backports"
  if ! grep -rqs "bookworm-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
    echo "deb http://deb.debian.org/debian bookworm-backports main" | $SUDO tee /etc/apt/sources.list.d/vabench-backports.list >/dev/null
  fi
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q -t bookworm-backports \
    mesa-vulkan-drivers libvulkan1 libegl1 libgl1
fi

# The review app's browser tests drive Debian's Chromium through its WebDriver (selenium);
# playwright's own browser download cannot work without internet.
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; else SUDO=; fi
  echo "[setup] installing chromium and chromium-driver (review app browser tests)"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends chromium chromium-driver
fi

# The interop checks repack a bundle by hand (tests/test_verify.py): the system's zip and tar.
if ! command -v zip >/dev/null; then
  if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; else SUDO=; fi
  echo "[setup] installing zip (the verify interop check)"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends zip
fi

if [[ ! -x "$VENV/bin/python" ]]; then
  echo "[setup] creating virtualenv $VENV"
  "$PY" -m venv "$VENV"
fi
# torch for the learn extra (docs/learn.md), before the extras that name it: the CPU build. Where the
# package index serves only the multi-GB CUDA build (PyPI's Linux wheel), name PyTorch's CPU index:
# TORCH_INDEX=https://download.pytorch.org/whl/cpu ./scripts/setup.sh
if ! "$VENV/bin/python" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)"; then
  echo "[setup] pip install torch==2.13.0 (CPU build, the learn extra)"
  "$VENV/bin/python" -m pip install -qq ${TORCH_INDEX:+--index-url "$TORCH_INDEX"} torch==2.13.0
fi
STAMP="$VENV/.vabench-installed"
if [[ ! -f "$STAMP" || pyproject.toml -nt "$STAMP" ]]; then
  echo "[setup] pip install -e .[dev]"
  # -qq: errors only. Warnings left at -q were setuptools' note on every editable install of a flat
  # layout and pip's notes on index locations this machine's pip config names: nothing to act on.
  "$VENV/bin/python" -m pip install -qq --upgrade pip
  "$VENV/bin/python" -m pip install -qq -e ".[dev]"
  touch "$STAMP"
fi
# Generate the low-poly render meshes once (cached under ~/.cache/vabench by default).
"$VENV/bin/python" -m vabench.envs.cli.assets --quiet
