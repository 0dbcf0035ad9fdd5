"""Every ``SPEC §N`` the code, tests and chart cite names a section of docs/SPEC.md that exists.

A reference is ``§N`` (section N: a heading ``## N. …``), ``§N.M`` (item M of section N's numbered list, as
§3.2 is the accelerator check) or ``§N check(s) M[–K]`` (the same items, spelled out). A ``§`` that follows
the name of another document (``FIELD-NOTES §1.2``) is not a SPEC reference; every other one is, so
``SPEC §3 and §9`` and ``SPEC §7/§9`` are two references each.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
SPEC = REPO_ROOT / "docs" / "SPEC.md"

#: Where references are looked for: the product, its tests and everything shipped or run beside it.
SEARCHED = (
    "src",
    "tests",
    "harness",
    "bench",
    "hack",
    "charts",
    "samples",
    "README.md",
    "CONTRIBUTING.md",
    "docs/architecture.md",
    "docs/install.md",
    "docs/usage.md",
    "docs/performance.md",
    "docs/testing.md",
)
#: Vendored third-party files, which cite nothing of ours.
NOT_SEARCHED = (REPO_ROOT / "tests" / "data",)
TEXT_SUFFIXES = {".py", ".md", ".yaml", ".yml", ".tpl", ".sh", ".txt", ".json", ".toml"}

_REFERENCE = re.compile(
    r"§(?P<section>\d+)(?:\.(?P<item>\d+))?(?: checks? (?P<first>\d+)(?:[–-](?P<last>\d+))?)?"
)
#: An upper-case document name right before the ``§`` (``FIELD-NOTES §1.2``, ``SPEC §3``).
_DOCUMENT_BEFORE = re.compile(r"\b([A-Z][A-Z0-9_-]*[A-Z0-9])\s*$")
_HEADING = re.compile(r"^## (\d+)\. \S", re.MULTILINE)
_LIST_ITEM = re.compile(r"^(\d+)\. ", re.MULTILINE)


@dataclass(frozen=True)
class Reference:
    where: str  # path:line
    section: int
    items: tuple[int, ...]  # () when the whole section is meant

    def __str__(self) -> str:
        suffix = "" if not self.items else " item(s) " + ", ".join(map(str, self.items))
        return f"{self.where}: §{self.section}{suffix}"


def references_in(text: str, where: str) -> list[Reference]:
    """The SPEC references of ``text`` (``where`` names its file; line numbers are appended)."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        for match in _REFERENCE.finditer(line):
            document = _DOCUMENT_BEFORE.search(line[: match.start()])
            if document is not None and document.group(1) != "SPEC":
                continue
            if match["item"] is not None:
                items: tuple[int, ...] = (int(match["item"]),)
            elif match["first"] is not None:
                first = int(match["first"])
                items = tuple(range(first, int(match["last"] or first) + 1))
            else:
                items = ()
            found.append(Reference(f"{where}:{number}", int(match["section"]), items))
    return found


def spec_sections(text: str) -> dict[int, set[int]]:
    """Section number → the numbers of the top-level items of its numbered lists."""
    headings = list(_HEADING.finditer(text))
    sections: dict[int, set[int]] = {}
    for index, heading in enumerate(headings):
        # A section runs to the next heading of any level-2 kind (numbered or not).
        end = text.find("\n## ", heading.end())
        body = text[heading.end() : end if end != -1 else len(text)]
        sections[int(heading.group(1))] = {int(item) for item in _LIST_ITEM.findall(body)}
        assert index == int(heading.group(1)), (
            f"sections are numbered 0, 1, 2 … in order; found {heading[0]!r}"
        )
    return sections


def _searched_files() -> list[Path]:
    files: list[Path] = []
    for name in SEARCHED:
        path = REPO_ROOT / name
        candidates = [path] if path.is_file() else sorted(path.rglob("*")) if path.is_dir() else []
        files.extend(
            candidate
            for candidate in candidates
            if candidate.is_file()
            and candidate.suffix in TEXT_SUFFIXES
            and not any(parent in NOT_SEARCHED for parent in candidate.parents)
            and ".egg-info" not in str(candidate)
        )
    return files


def all_references() -> list[Reference]:
    references = []
    for path in _searched_files():
        references.extend(references_in(path.read_text(encoding="utf-8"), str(path.relative_to(REPO_ROOT))))
    return references


def test_every_spec_reference_resolves_to_a_section_of_docs_spec() -> None:
    sections = spec_sections(SPEC.read_text(encoding="utf-8"))
    references = all_references()
    # The code cites the contract about a hundred times; finding almost none means the search went wrong.
    assert len(references) > 50, [str(r) for r in references]
    unresolved = [
        str(reference)
        for reference in references
        if reference.section not in sections or not set(reference.items) <= sections[reference.section]
    ]
    assert unresolved == [], "SPEC references without a section or list item in docs/SPEC.md"


def test_docs_spec_has_the_contracted_sections() -> None:
    sections = spec_sections(SPEC.read_text(encoding="utf-8"))
    assert set(range(10)) <= set(sections)
    assert sections[3] >= {1, 2, 3, 4, 5}  # the five compatibility checks, cited as §3.1-§3.5
    assert sections[4] >= {1, 2, 3, 4}  # the four ranking criteria


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("(SPEC §1)", [(1, ())]),
        ("SPEC §3.2 and §9", [(3, (2,)), (9, ())]),
        ("SPEC §7/§9", [(7, ()), (9, ())]),
        ("(SPEC §1, §5)", [(1, ()), (5, ())]),
        # SPEC v4 numbering: deployment mode is §3 check 3, formats check 4, size check 5.
        ("passes SPEC §3 checks 1–5", [(3, (1, 2, 3, 4, 5))]),
        ("deployment mode (§3 check 3)", [(3, (3,))]),
        ("formats (SPEC §3.4)", [(3, (4,))]),
        ("size (§3 check 5)", [(3, (5,))]),
        ("reasons (SPEC\n§3–§6).", [(3, ()), (6, ())]),
        ("end of a sentence: SPEC §6.", [(6, ())]),
        ("# --- §5 condition messages", [(5, ())]),
        ("finalizers (FIELD-NOTES §1.2)", []),
        ("no section sign at all", []),
    ],
)
def test_references_in(text: str, expected: list[tuple[int, tuple[int, ...]]]) -> None:
    assert [(r.section, r.items) for r in references_in(text, "x")] == expected


def test_spec_sections_reads_headings_and_numbered_items() -> None:
    text = (
        "# Title\n\n## 0. Zero\n\ntext\n\n## 1. One\n\n1. first\n2. second\n   3. indented, not an item\n"
        "\n## Notes\n\n7. not in §1\n"
    )
    assert spec_sections(text) == {0: set(), 1: {1, 2}}


def test_spec_sections_rejects_numbering_gaps() -> None:
    with pytest.raises(AssertionError, match="numbered 0, 1, 2"):
        spec_sections("## 0. Zero\n\n## 2. Two\n")
