"""kube is the one client layer: the import contract that keeps kubernetes_asyncio there names every other
package, so a package added later is covered too (a forbidden contract checks only what it names)."""

from __future__ import annotations

import json
import subprocess
import sys
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


#: The plugin's modules that read a live cluster.
LIVE_CLI_MODULES = (
    "ome_selector.cli.kubectl_ome",
    "ome_selector.cli.cluster_source",
    "ome_selector.cli.live_completion",
    "ome_selector.cli.model_apply",
    "ome_selector.cli.status",
    "ome_selector.cli.check_webhook",
)


def test_the_plugins_live_reads_load_no_kopf() -> None:
    """What the import contract cannot see (an import made while a module runs): the plugin, ready to read a
    cluster, has loaded neither Kopf nor the synchronous client Kopf would bring with it."""
    probe = f"import json, sys, {', '.join(LIVE_CLI_MODULES)}; print(json.dumps(sorted(sys.modules)))"
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    roots = {name.split(".")[0] for name in json.loads(loaded.stdout)}
    assert "kubernetes_asyncio" in roots  # the probe did load the client layer
    assert not roots & {"kopf", "kubernetes"}, loaded.stdout
