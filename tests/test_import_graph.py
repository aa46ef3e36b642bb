"""The house plan, read from the code itself: which package may import which.

Each folder is a package (``services/table``, ``services/runtime/processes``, ...).  The
graph of imports between packages has no cycle, and the arrows that would tangle the
rooms are forbidden (docs/design/layout.md):

- the domain imports nothing of ours outside it, and no I/O, clock or event loop;
- a projection uses of the services only the shared hallway: ``wire/`` (subjects and
  messages), ``client/`` (the request-with-retry core and the clients built on it),
  ``store/`` and ``runtime/``;
- a projection imports no other projection (what they share, the tracking projector,
  lives in ``projections/`` itself or in the domain);
- a service imports no projection; only the composition of the whole room
  (``services/room``), the command line (``services/cli``) and the web console
  (``services/console``, a client of both sides) reach both sides;
- nothing of the room imports the tools (``tools/``: benchmarks, the fault drill), and no
  test imports a benchmark.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent
TOPS = {"domain": "studroom.domain", "services": "studroom.services",
        "projections": "studroom.projections", "tools": "studroom.tools"}
HALLWAY = ("studroom.services.wire", "studroom.services.client", "studroom.services.store",
           "studroom.services.runtime")
COMPOSITION = ("studroom.services.room", "studroom.services.cli", "studroom.services.console")
NOT_IN_THE_RULES = {"asyncio", "socket", "time", "datetime", "threading", "subprocess", "os", "pathlib",
                    "psycopg", "nats", "eventsourcing", "logging"}


def _modules() -> dict[str, Path]:
    found = {}
    for folder, name in TOPS.items():
        for path in (REPOSITORY / folder).rglob("*.py"):
            parts = list(path.relative_to(REPOSITORY / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([name, *parts])] = path
    return found


MODULES = _modules()


def package_of(module: str) -> str:
    return module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]


def imported(module: str, path: Path) -> Iterator[str]:
    """Every module (ours or not) that ``module`` imports, at any depth of its code."""
    here = package_of(module) if module in MODULES else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")[: len(here.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                candidate = f"{source}.{alias.name}"
                yield candidate if candidate in MODULES else source


def ours(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def arrows() -> dict[str, set[str]]:
    """module -> the modules of ours it imports."""
    graph: dict[str, set[str]] = defaultdict(set)
    for module, path in MODULES.items():
        for name in imported(module, path):
            target = ours(name)
            if target and target != module:
                graph[module].add(target)
    return graph


def package_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one package (Tarjan)."""
    packages: dict[str, set[str]] = defaultdict(set)
    for source, targets in graph.items():
        for target in targets:
            if package_of(source) != package_of(target):
                packages[package_of(source)].add(package_of(target))
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(package: str) -> None:
        index[package] = low[package] = len(index)
        stack.append(package)
        for other in packages[package]:
            if other not in index:
                visit(other)
                low[package] = min(low[package], low[other])
            elif other in stack:
                low[package] = min(low[package], index[other])
        if low[package] == index[package]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == package:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for package in list(packages):
        if package not in index:
            visit(package)
    return groups


def forbidden(source: str, target: str) -> str | None:
    """Why ``source`` may not import ``target`` (both ours), or None."""
    def inside(module: str, *places: str) -> bool:
        return any(module == place or module.startswith(place + ".") for place in places)

    if inside(source, "studroom.domain") and not inside(target, "studroom.domain"):
        return "the domain imports nothing outside it"
    if inside(target, "studroom.tools") and not inside(source, "studroom.tools"):
        return "the room imports no tool"
    if inside(source, "studroom.projections") and inside(target, "studroom.services") \
            and not inside(target, *HALLWAY):
        return "a projection uses only wire/, client/, store/ and runtime/ of the services"
    if inside(source, "studroom.services") and not inside(source, *COMPOSITION) \
            and inside(target, "studroom.projections"):
        return "a service imports no projection"
    if _projection(source) and _projection(target) and _projection(source) != _projection(target):
        return "a projection imports no other projection (what they share lives in projections/ or the domain)"
    return None


def _projection(module: str) -> str | None:
    """``ledger`` for ``studroom.projections.ledger.entries``; None outside a projection's folder."""
    parts = module.split(".")
    if parts[:2] != ["studroom", "projections"] or len(parts) < 4:
        return None
    return parts[2]


def test_no_cycle_between_packages() -> None:
    assert package_cycles(arrows()) == []


def test_no_forbidden_arrow() -> None:
    found = sorted(f"{source} -> {target}: {why}" for source, targets in arrows().items()
                   for target in targets if (why := forbidden(source, target)))
    assert found == []


def test_the_rules_do_no_io_and_read_no_clock() -> None:
    found = sorted(f"{module} imports {name}" for module, path in MODULES.items()
                   if module.startswith("studroom.domain.")
                   for name in imported(module, path) if name.split(".")[0] in NOT_IN_THE_RULES)
    assert found == []


def test_no_test_imports_a_benchmark() -> None:
    found = sorted(f"{path.relative_to(REPOSITORY)} imports {name}"
                   for path in (REPOSITORY / "tests").rglob("*.py")
                   for name in imported(path.stem, path) if name.startswith("studroom.tools.bench"))
    assert found == []


def test_the_checks_see_a_cycle_and_a_forbidden_arrow() -> None:
    """The checks themselves: a made-up cycle and arrows are found."""
    graph = {"studroom.services.table.service": {"studroom.services.timer.service"},
             "studroom.services.timer.service": {"studroom.services.table.service"}}
    assert package_cycles(graph) == [["studroom.services.table", "studroom.services.timer"]]
    assert forbidden("studroom.domain.table", "studroom.services.wire.subjects")
    assert forbidden("studroom.projections.ledger.sources", "studroom.services.cashier.account_store")
    assert forbidden("studroom.services.auth.powers", "studroom.projections.lobby.jetstream")
    assert forbidden("studroom.services.room.room", "studroom.projections.ledger.room_check") is None
    assert forbidden("studroom.projections.lobby.projection", "studroom.projections.history.text")
    assert forbidden("studroom.projections.ledger.projector", "studroom.projections.tracking") is None
