"""The rules of stud poker and the table aggregate: pure, no I/O, no clock, no randomness
it was not handed.

The rule modules are plain typed Python.  Installed with a C compiler at hand, mypyc
compiles them (``setup.py``); the interpreter then loads the compiled modules, which
behave identically (tests/domain/test_compiled.py) and run about twice as fast.

``COMPILED`` says which is running.  The pure modules run instead when
``STUDROOM_PURE_PYTHON=1`` is set, and in a source checkout whose compiled modules are
older than their source (an edited rule must never run as its stale compiled copy:
``make`` recompiles; until then a warning says why it is slower).
"""

from __future__ import annotations

import os
import sys
import warnings
from importlib.machinery import EXTENSION_SUFFIXES, ModuleSpec
from importlib.util import spec_from_file_location
from pathlib import Path

# the modules mypyc compiles (setup.py lists the same names)
NATIVE_MODULES = (
    "cards", "hand_ranking", "record", "hand", "games", "commitment", "deck", "betting", "dealing", "pots", "showdown",
    "table",
)

_HERE = Path(__file__).resolve().parent


def _compiled_file(module: str) -> Path | None:
    for suffix in EXTENSION_SUFFIXES:
        path = _HERE / f"{module}{suffix}"
        if path.exists():
            return path
    return None


def _stale_module() -> str | None:
    """In a source checkout (pyproject.toml beside the package), the first module whose
    source is newer than its compiled copy; installed packages are never stale."""
    if not (_HERE.parent / "pyproject.toml").exists():
        return None
    for module in NATIVE_MODULES:
        compiled = _compiled_file(module)
        if compiled is not None and (_HERE / f"{module}.py").stat().st_mtime > compiled.stat().st_mtime:
            return module
    return None


class _PureSource:
    """A meta path finder that loads the rule modules from their ``.py`` source even
    where a compiled copy lies beside them (all of them: compiled modules call one
    another directly, so a mix would run stale code)."""

    @staticmethod
    def find_spec(fullname: str, path: object = None, target: object = None) -> ModuleSpec | None:
        package, _, module = fullname.rpartition(".")
        if package != __name__ or module not in NATIVE_MODULES:
            return None
        return spec_from_file_location(fullname, _HERE / f"{module}.py")


def _choose() -> bool:
    if not all(_compiled_file(m) for m in NATIVE_MODULES):
        return False
    stale = _stale_module()
    if stale is not None:
        warnings.warn(
            f"studroom.domain: {stale}.py is newer than its compiled copy; running the pure "
            "Python rules (run `make` or `pip install -e .` to recompile)",
            RuntimeWarning, stacklevel=2,
        )
        return False
    return not os.environ.get("STUDROOM_PURE_PYTHON")


COMPILED = _choose()
if not COMPILED:
    sys.meta_path.insert(0, _PureSource())
