"""The interop checks' own venvs (tests/cached_venv.py): built once, and a build that did not
finish is made again instead of being trusted."""

import pytest

from tests.cached_venv import built, cached_venv


def test_a_venv_is_built_once_and_a_broken_build_is_made_again(tmp_path):
    calls = []

    def fails(root):
        root.mkdir()
        (root / "half").write_text("")
        raise OSError("the network went away")

    def builds(root):
        calls.append(root)
        root.mkdir()
        return "pins\n"

    root = tmp_path / "venvs" / "key"
    with pytest.raises(OSError):
        cached_venv(root, fails)
    assert not built(root)  # no marker: the next caller does not trust the half-made folder
    assert cached_venv(root, builds) == root and not (root / "half").exists()
    assert cached_venv(root, builds) == root and len(calls) == 1  # reused
    assert (root / ".complete").read_text() == "pins\n"
