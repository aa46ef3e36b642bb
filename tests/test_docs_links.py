"""The front door's directions hold in a clone: every link of the README and the docs
goes to a file of the repository, and every path they name in code quotes exists.

A clone has nothing beside it (no ../shared): the rules and the scenario format are
docs/rules.md and docs/scenarios.md, and the README links those.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parent.parent
DOCUMENTS = [REPOSITORY / "README.md", *sorted((REPOSITORY / "docs").rglob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
QUOTED_PATH = re.compile(r"`((?:domain|services|projections|tools|tests|deploy|docs|verifier)/[\w./-]*)`")


def _anchors(document: Path) -> set[str]:
    """GitHub's anchors of the document's headings."""
    anchors = set()
    for line in document.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            anchors.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return anchors


def _links(document: Path) -> list[str]:
    return [link for link in LINK.findall(document.read_text(encoding="utf-8"))
            if not re.match(r"[a-z]+:", link)]


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda d: str(d.relative_to(REPOSITORY)))
def test_every_link_resolves(document: Path) -> None:
    broken = []
    for link in _links(document):
        target, _, anchor = link.partition("#")
        path = (document.parent / target).resolve() if target else document
        if not path.exists() or (REPOSITORY not in path.parents and path != REPOSITORY):
            broken.append(link)
        elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
            broken.append(link)
    assert broken == []


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda d: str(d.relative_to(REPOSITORY)))
def test_every_quoted_path_exists(document: Path) -> None:
    missing = sorted({path for path in QUOTED_PATH.findall(document.read_text(encoding="utf-8"))
                      if "*" not in path and "<" not in path
                      and not (REPOSITORY / path.rstrip("/")).exists()})
    assert missing == []


def test_the_readme_links_the_rules_and_the_scenario_format() -> None:
    links = _links(REPOSITORY / "README.md")
    assert "docs/rules.md" in links and "docs/scenarios.md" in links
