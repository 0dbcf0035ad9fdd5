"""kube is the one client layer: the import contract that keeps kubernetes_asyncio there names every other
package, so a package added later is covered too (a forbidden contract checks only what it names)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import ome_selector

REPO_ROOT = Path(__file__).resolve().parents[3]


def _contract() -> dict[str, Any]:
    contracts = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (found,) = [
        c for c in contracts if c["type"] == "forbidden" and c["forbidden_modules"] == ["kubernetes_asyncio"]
    ]
    return dict(found)


def test_the_contract_names_every_package_but_kube() -> None:
    root = Path(ome_selector.__file__).parent
    packages = {f"ome_selector.{p.name}" for p in root.iterdir() if (p / "__init__.py").is_file()}
    assert "ome_selector.kube" in packages
    assert set(_contract()["source_modules"]) == packages - {"ome_selector.kube"}


def test_the_contract_lets_nothing_through() -> None:
    assert not _contract().get("ignore_imports")
