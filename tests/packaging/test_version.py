"""The version is written once, as ``ome_selector.__version__``; every other place that names it must agree.

The package metadata reads it (pyproject's dynamic version); the chart, the krew manifest and the image label
cannot, so they carry copies that these tests keep in step (CONTRIBUTING.md, "Cutting a release").
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

from ome_selector import __version__

REPO_ROOT = Path(__file__).resolve().parents[2]

#: Semantic versioning without a leading ``v`` (a pre-release part such as ``-rc.1`` allowed).
SEMVER = re.compile(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?")


def test_the_version_is_a_semantic_version() -> None:
    assert SEMVER.fullmatch(__version__), __version__


def test_the_package_metadata_takes_its_version_from_the_module() -> None:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"], "write the version only in src/ome_selector/__init__.py"
    assert "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "ome_selector.__version__"}


def test_the_chart_version_and_app_version_are_the_package_version() -> None:
    chart = yaml.safe_load((REPO_ROOT / "charts" / "ome-selector" / "Chart.yaml").read_text())
    # appVersion is also the default image tag (values.yaml `image.tag`), so it must name a released image.
    assert chart["appVersion"] == __version__
    # The chart is released together with the code: one version for both.
    assert chart["version"] == __version__


def test_the_krew_manifest_is_at_the_package_version() -> None:
    spec = yaml.safe_load((REPO_ROOT / "plugins" / "krew" / "ome-selector.yaml").read_text())["spec"]
    assert spec["version"] == f"v{__version__}"
    for platform in spec["platforms"]:
        assert f"/kubectl-ome_selector_v{__version__}_" in platform["uri"]


def _dockerfile_final_stage(text: str) -> list[str]:
    """The instructions of the last stage, continuation lines joined (the image's labels live there)."""
    joined = re.sub(r"\\\n\s*", " ", text)
    instructions = [
        line.strip() for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")
    ]
    last_from = max(i for i, line in enumerate(instructions) if line.upper().startswith("FROM "))
    return instructions[last_from + 1 :]


def image_version_label(dockerfile: str) -> str:
    """The value of ``org.opencontainers.image.version`` as built without ``--build-arg``: a ``${NAME}`` in
    it is replaced by the default of that ``ARG`` in the final stage."""
    stage = _dockerfile_final_stage(dockerfile)
    defaults = {
        match.group(1): match.group(2)
        for line in stage
        if (match := re.fullmatch(r"ARG\s+([A-Za-z_][A-Za-z0-9_]*)=(\S+)", line, flags=re.IGNORECASE))
    }
    labels = [
        match.group(1)
        for line in stage
        if line.upper().startswith("LABEL ")
        for match in re.finditer(r'org\.opencontainers\.image\.version="([^"]*)"', line)
    ]
    assert len(labels) == 1, f"expected one org.opencontainers.image.version label, found {labels}"
    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: defaults[m.group(1)].strip('"'), labels[0])


def test_the_image_label_is_the_package_version() -> None:
    assert image_version_label((REPO_ROOT / "Dockerfile").read_text()) == __version__


def test_the_label_reader_resolves_only_the_final_stage() -> None:
    dockerfile = (
        "FROM python AS build\n"
        "ARG VERSION=9.9.9\n"
        "FROM python\n"
        "ARG VERSION=1.2.3\n"
        'LABEL org.opencontainers.image.title="x" \\\n'
        '      org.opencontainers.image.version="${VERSION}"\n'
    )
    assert image_version_label(dockerfile) == "1.2.3"
    assert image_version_label('FROM python\nLABEL org.opencontainers.image.version="2.0.0"\n') == "2.0.0"
