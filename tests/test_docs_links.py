"""Every link between the README, the reference pages and the studies points at a file that is there, and a link to a
section at a heading that page has (as GitHub makes its anchors)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "studies").glob("**/*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    lines, inside, found = page.read_text(encoding="utf-8").splitlines(), False, set()
    for line in lines:
        if line.startswith("```"):
            inside = not inside
        elif not inside and line.startswith("#"):
            found.add(_anchor(line.lstrip("#")))
    return found


def _links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t)]


def test_the_pages_are_found():
    names = {p.relative_to(ROOT).as_posix() for p in PAGES}
    assert {"README.md", "docs/benchmarks.md", "studies/README.md", "studies/judge_learning/README.md"} <= names


def test_the_anchor_is_githubs():
    assert _anchor("SFT learns; RLVR does not add") == "sft-learns-rlvr-does-not-add"
    assert _anchor("verl's reward loop, whole groups") == "verls-reward-loop-whole-groups"
    assert _anchor("Grounded extraction: what the check costs") == "grounded-extraction-what-the-check-costs"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_link_points_at_a_file_and_a_heading_that_are_there(page):
    broken = []
    for target in _links(page):
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
            broken.append(f"{target}: no heading #{anchor} in {file.relative_to(ROOT)}")
    assert not broken, f"{page.relative_to(ROOT)}:\n" + "\n".join(broken)
