"""The documents stay what they claim to be: the README a front door, docs/architecture.md the house as the
code has it (its import contracts are exactly those `lint-imports` checks)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
README = REPO_ROOT / "README.md"
ARCHITECTURE = REPO_ROOT / "docs" / "architecture.md"
#: A front door, not a manual (cert-manager's, KServe's, Kopf's and Kyverno's are 4–9 KB).
README_MAX_BYTES = 12 * 1024
#: What a terminal shows before the first scroll.
FIRST_SCREEN_LINES = 40


def test_the_readme_is_at_most_12_kb() -> None:
    assert len(README.read_bytes()) <= README_MAX_BYTES


def test_a_newcomer_reaches_the_install_steps_on_the_first_screen() -> None:
    first_screen = README.read_text(encoding="utf-8").splitlines()[:FIRST_SCREEN_LINES]
    assert "## Install with Helm" in first_screen
    assert any(line.startswith("helm install ome-selector charts/ome-selector") for line in first_screen)


def test_the_readme_carries_no_measurements() -> None:
    """Figures go to docs/performance.md (CONTRIBUTING.md, "Where figures go")."""
    measured = re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|µs|MiB|GiB)\b|\bp99\b")
    assert measured.findall(README.read_text(encoding="utf-8")) == []


def contracts_in_pyproject() -> set[str]:
    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return {contract["name"] for contract in config["tool"]["importlinter"]["contracts"]}


def contracts_in(text: str) -> set[str]:
    section = text.split("### Import contracts", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("|---")]
    # The first row is the header; a cell's own bar is written \| in Markdown.
    return {re.split(r"(?<!\\) \| ", row[2:], maxsplit=1)[0].replace("\\|", "|") for row in rows[1:]}


def test_the_architecture_names_exactly_the_contracts_lint_imports_checks() -> None:
    assert contracts_in(ARCHITECTURE.read_text(encoding="utf-8")) == contracts_in_pyproject()


def test_the_contract_reader_reads_names_with_escaped_bars() -> None:
    text = (
        "### Import contracts\n\n| Contract | Type | What |\n|---|---|---|\n"
        "| a > b \\| c > d | `layers` | x |\n| No cycles | `acyclic_siblings` | y |\n"
        "\n## Next\n| Not | a | row |\n"
    )
    assert contracts_in(text) == {"a > b | c > d", "No cycles"}
