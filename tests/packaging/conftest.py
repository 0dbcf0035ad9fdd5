"""Packaging fixtures: the project's wheel, built from a temporary copy of the repository.

Building in place would leave ``build/`` and ``*.egg-info`` in the work tree; the copy holds only what a
wheel is built from (the top-level files and ``src/``), so whatever the build writes stays in the copy.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness import chart

REPO_ROOT = Path(__file__).resolve().parents[2]


def copy_build_inputs(target: Path) -> Path:
    """The top-level files and ``src/`` (without caches or an editable install's egg-info) in ``target``."""
    for path in REPO_ROOT.iterdir():
        if path.is_file():
            shutil.copy2(path, target / path.name)
    shutil.copytree(
        REPO_ROOT / "src", target / "src", ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    )
    return target


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``pip wheel --no-deps`` of the project, as the Dockerfile's first stage builds it."""
    source = copy_build_inputs(tmp_path_factory.mktemp("source"))
    out = tmp_path_factory.mktemp("wheel")
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=source,
    )
    if result.returncode != 0:
        pytest.fail(f"pip wheel failed:\n{result.stdout}\n{result.stderr}")
    (built,) = out.glob("ome_selector-*.whl")
    return built


@pytest.fixture(scope="session")
def helm() -> Path:
    """The helm binary; the chart's tests skip without one, except under CI."""
    try:
        return chart.find_helm()
    except chart.HelmNotFoundError as error:
        if os.environ.get("CI"):
            raise
        pytest.skip(str(error))
