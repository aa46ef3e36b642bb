"""Build script: everything is declared in pyproject.toml except the compiled domain.

The rules in ``domain/`` are plain typed Python.  When a C compiler is at hand, mypyc
compiles the modules that domain/__init__.py lists in ``NATIVE_MODULES`` into C extensions (about twice as fast; same source, same
behaviour, proven by tests/domain/test_compiled.py).  Without a compiler, or with
STUDROOM_PURE_PYTHON=1, the package installs as pure Python and works the same, slower.

mypy type-checks what it compiles, so msgspec (the events' base class) is a build
requirement too (pyproject.toml).  mypyc names a module after its path, so it compiles them through build/mypyc-src/, where
``studroom/domain`` links to ``domain/`` (our repository keeps the top-level layout, the
import name is ``studroom.domain``).  The modules defining msgspec Structs (events,
commands, config, announcements) stay interpreted: msgspec reads their annotations.
"""

from __future__ import annotations

import ast
import os
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

STAGE = Path("build/mypyc-src/studroom")


def native_modules() -> list[str]:
    """``NATIVE_MODULES`` as domain/__init__.py declares it (read, not imported)."""
    tree = ast.parse(Path("domain/__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "NATIVE_MODULES":
            return list(ast.literal_eval(node.value))
    raise LookupError("domain/__init__.py declares no NATIVE_MODULES")


def compiled_extensions() -> list:
    if os.environ.get("STUDROOM_PURE_PYTHON"):
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        print("studroom: mypyc is missing; installing the pure Python domain", file=sys.stderr)
        return []
    STAGE.mkdir(parents=True, exist_ok=True)
    (STAGE / "__init__.py").touch()          # only here, so that mypy names the modules
    link = STAGE / "domain"
    link.unlink(missing_ok=True)
    link.symlink_to(Path("domain").resolve(), target_is_directory=True)
    return mypycify(
        [str(link / f"{name}.py") for name in native_modules()],
        opt_level="3",
        group_name="studroom.domain._native",
    )


class OptionalBuildExt(build_ext):
    """Compile if possible; on a machine without a working C compiler, leave no half
    build behind and install the pure Python domain instead."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as error:  # noqa: BLE001 - any compiler failure means "pure"
            for output in self.get_outputs():
                Path(output).unlink(missing_ok=True)
            print(f"studroom: compiling the domain failed ({error}); it runs as pure Python",
                  file=sys.stderr)


setup(ext_modules=compiled_extensions(), cmdclass={"build_ext": OptionalBuildExt})
