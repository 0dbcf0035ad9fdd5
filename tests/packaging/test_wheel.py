"""The wheel holds the product and only the product: every ``ome_selector`` module, its entry points and its
runtime dependencies; no harness, no CRD copies, no tests or benchmarks."""

from __future__ import annotations

import re
import zipfile
from email.parser import Parser
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

#: What the operator, its webhook and the CLI need at run time (distribution names, normalized).
RUNTIME_DEPENDENCIES = {
    "kopf",
    "pydantic",
    "kubernetes-asyncio",
    "pyyaml",
    "cryptography",
    "prometheus-client",
    "huggingface-hub",  # reading hf:// model metadata (SPEC §10)
    "jsonpath-ng",  # the plugin's -o jsonpath= (SPEC §6)
}


def _product_files() -> set[str]:
    """The package's modules, marker and data as the wheel must carry them (paths inside the wheel): the
    digest of the CRDs' fields that lint's unknown-field finding reads (SPEC §11)."""
    package = REPO_ROOT / "src" / "ome_selector"
    files = {f"ome_selector/{path.relative_to(package)}" for path in package.rglob("*.py")}
    return files | {"ome_selector/py.typed", "ome_selector/api/crdfields.json"}


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_wheel_holds_exactly_the_product_modules(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    metadata = {n for n in names if n.split("/")[0].endswith(".dist-info")}
    assert set(names) - metadata == _product_files()
    assert not [n for n in names if n.startswith(("harness/", "tests/", "bench/")) or n.endswith(".yaml")]


def test_wheel_declares_both_commands(wheel: Path) -> None:
    archive = zipfile.ZipFile(wheel)
    entry_points = archive.read(
        next(n for n in archive.namelist() if n.endswith("entry_points.txt"))
    ).decode()
    assert "ome-selector = ome_selector.cli.ome_selector:main" in entry_points
    assert "kubectl-ome_selector = ome_selector.cli.kubectl_ome:main" in entry_points
    assert "kubectl_complete-ome_selector = ome_selector.cli.kubectl_ome:complete_main" in entry_points
    # OME's own plugin is kubectl-ome: the wheel installs no executable of that name (SPEC §6).
    assert not re.search(r"^kubectl(_complete)?-ome\s*=", entry_points, re.MULTILINE)


def test_wheel_depends_on_one_kubernetes_client_beside_kopf(wheel: Path) -> None:
    archive = zipfile.ZipFile(wheel)
    metadata = Parser().parsestr(
        archive.read(next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    )
    runtime = {
        _normalized(re.split(r"[\s<>=!~;\[(]", requirement, maxsplit=1)[0])
        for requirement in metadata.get_all("Requires-Dist") or []
        if "extra ==" not in requirement
    }
    assert runtime == RUNTIME_DEPENDENCIES
