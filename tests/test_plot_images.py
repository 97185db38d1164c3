"""docs/make_images.py draws every picture of the guide from real dpcalc commands, and the guide's page of
pictures (docs/guide/pictures.md) shows exactly those commands and pictures."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "docs" / "make_images.py"


def _script():
    if "make_images" not in sys.modules:
        spec = importlib.util.spec_from_file_location("make_images", SCRIPT)
        module = importlib.util.module_from_spec(spec)
        sys.modules["make_images"] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
    return sys.modules["make_images"]


def test_script_draws_every_picture(tmp_path):
    """Run the script itself (as a user would) into a scratch directory, not over docs/img."""
    import matplotlib.image

    proc = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path)], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr
    names = sorted(image.name for image in _script().IMAGES)
    assert sorted(p.name for p in tmp_path.iterdir()) == names
    for name in names:
        data = (tmp_path / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        assert matplotlib.image.imread(tmp_path / name).shape[:2] == (540, 840)
    assert [Path(line).name for line in proc.stdout.split()] == [image.name for image in _script().IMAGES]


def test_one_picture_per_command():
    commands = {image.command.split()[1] for image in _script().IMAGES}
    assert commands == {"convert", "compose", "sgd-epsilon", "iterate", "langevin", "odometer"}


PAGE = ROOT / "docs" / "guide" / "pictures.md"


def test_pictures_page_is_current():
    """docs/guide/pictures.md is what the script generates (python docs/make_images.py --tour)."""
    text = PAGE.read_text(encoding="utf-8")
    assert _script().splice_readme(text) == text


def test_pictures_page_shows_every_committed_picture():
    text = PAGE.read_text(encoding="utf-8")
    shown = re.findall(r"!\[[^\]]*\]\((\.\./img/[^)]+)\)", text)
    committed = sorted(f"../img/{p.name}" for p in (ROOT / "docs" / "img").glob("*.png"))
    assert sorted(shown) == committed
    for image in _script().IMAGES:
        assert image.plot_command() in text
