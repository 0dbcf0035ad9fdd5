"""Relative links in the project's documents lead somewhere: the file exists and, with ``#anchor``, so does
the heading (GitHub's anchor rule: lower case, punctuation dropped, spaces as hyphens)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = (
    "README.md",
    "CONTRIBUTING.md",
    "CHANGELOG.md",
    "docs/SPEC.md",
    "docs/architecture.md",
    "docs/install.md",
    "docs/usage.md",
    "docs/performance.md",
    "docs/testing.md",
    "docs/monitoring.md",
    "docs/runbooks.md",
)

_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6} (.+?)\s*$", re.MULTILINE)
_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def anchor(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def anchors_of(path: Path) -> set[str]:
    return {anchor(heading) for heading in _HEADING.findall(_FENCE.sub("", path.read_text(encoding="utf-8")))}


def broken_links(document: Path) -> list[str]:
    broken = []
    for target in _LINK.findall(_FENCE.sub("", document.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):  # https:, mailto: …: not ours to check here
            continue
        file_part, _, fragment = target.partition("#")
        linked = (document.parent / file_part).resolve() if file_part else document
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif fragment and linked.suffix == ".md" and fragment not in anchors_of(linked):
            broken.append(f"{target}: no such heading")
    return broken


@pytest.mark.parametrize("name", DOCUMENTS)
def test_relative_links_resolve(name: str) -> None:
    assert broken_links(REPO_ROOT / name) == []


def test_anchor_follows_githubs_rule() -> None:
    assert anchor("0. Deployment model") == "0-deployment-model"
    assert (
        anchor("1. Resources (group `ome.io`, version `v1beta1`)")
        == "1-resources-group-omeio-version-v1beta1"
    )
    assert anchor("Choices where the contract is silent") == "choices-where-the-contract-is-silent"


def test_a_broken_link_is_reported(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Present\n")
    document = tmp_path / "doc.md"
    document.write_text(
        "[a](other.md#present) [b](other.md#absent) [c](missing.md) [d](https://x.invalid/)\n"
    )
    assert broken_links(document) == ["other.md#absent: no such heading", "missing.md: no such file"]
