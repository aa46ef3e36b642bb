"""``make room`` on a fresh clone says what it installs, and roughly how long it takes,
before the install starts (issue 22).  ``make -n`` prints the recipe without running
it: no real install."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAID = "installing Studroom and its dependencies into .venv (about 4 minutes the first time"


def test_make_room_on_a_fresh_clone_says_the_install_before_it_runs(tmp_path: Path) -> None:
    for name in ("Makefile", "pyproject.toml", "setup.py"):        # a clone without .venv
        shutil.copy(ROOT / name, tmp_path / name)
    plan = subprocess.run(["make", "-n", "room"], cwd=tmp_path, capture_output=True, text=True,
                          check=True).stdout.splitlines()
    said = next(i for i, line in enumerate(plan) if SAID in line)
    install = next(i for i, line in enumerate(plan) if "pip install" in line and "-e '.[test,bench]'" in line)
    assert plan[said].startswith("echo ") and said == install - 1
