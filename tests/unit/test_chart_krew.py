"""The krew manifest of `kubectl ome` (plugins/krew/ome.yaml): well formed and in step with the package."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

from ome_selector import __version__

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_krew_manifest_is_a_plugin_named_ome_at_the_package_version() -> None:
    manifest = yaml.safe_load((REPO_ROOT / "plugins" / "krew" / "ome.yaml").read_text())
    assert manifest["apiVersion"] == "krew.googlecontainertools.github.com/v1alpha2"
    assert manifest["kind"] == "Plugin"
    assert (
        manifest["metadata"]["name"] == "ome"
    )  # `kubectl ome`; krew names are lowercase, no kubectl- prefix
    spec = manifest["spec"]
    assert spec["version"] == f"v{__version__}"
    assert len(spec["shortDescription"]) <= 60
    assert spec["description"].startswith("kubectl ome runtime explain")
    platforms = {
        (p["selector"]["matchLabels"]["os"], p["selector"]["matchLabels"]["arch"]): p
        for p in spec["platforms"]
    }
    assert set(platforms) == {
        ("linux", "amd64"),
        ("linux", "arm64"),
        ("darwin", "amd64"),
        ("darwin", "arm64"),
    }
    scripts = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    for (os_name, arch), platform in platforms.items():
        assert platform["bin"] in scripts  # the console script the frozen executable is built from
        assert platform["uri"].endswith(f"/kubectl-ome_{spec['version']}_{os_name}_{arch}.tar.gz")
        assert re.fullmatch(r"[0-9a-f]{64}", platform["sha256"])
