"""The krew manifest of `kubectl ome-selector` (plugins/krew/ome-selector.yaml): well formed, in step with the
package, and named so that it cannot overshadow OME's own `kubectl ome` plugin (SPEC §6)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

from ome_selector import __version__

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_krew_manifest_is_a_plugin_named_ome_selector_at_the_package_version() -> None:
    manifest = yaml.safe_load((REPO_ROOT / "plugins" / "krew" / "ome-selector.yaml").read_text())
    assert manifest["apiVersion"] == "krew.googlecontainertools.github.com/v1alpha2"
    assert manifest["kind"] == "Plugin"
    assert (
        manifest["metadata"]["name"] == "ome-selector"
    )  # `kubectl ome-selector`; krew names are lowercase, no kubectl- prefix
    spec = manifest["spec"]
    assert spec["version"] == f"v{__version__}"
    assert len(spec["shortDescription"]) <= 60
    assert spec["description"].startswith("kubectl ome-selector runtime explain")
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
        assert platform["bin"] == "kubectl-ome_selector"  # invoked as `kubectl ome-selector`
        assert platform["bin"] in scripts  # the console script the frozen executable is built from
        assert platform["uri"].endswith(f"/kubectl-ome_selector_{spec['version']}_{os_name}_{arch}.tar.gz")
        assert re.fullmatch(r"[0-9a-f]{64}", platform["sha256"])


def test_no_kubectl_ome_executable_is_installed_by_default() -> None:
    """OME's plugin is `kubectl-ome`: the package's console scripts must not shadow it (the alias is a link a
    user makes deliberately, SPEC §6)."""
    scripts = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert set(scripts) == {"kubectl-ome_selector", "kubectl_complete-ome_selector", "ome-selector"}
    assert not (REPO_ROOT / "plugins" / "krew" / "ome.yaml").exists()
