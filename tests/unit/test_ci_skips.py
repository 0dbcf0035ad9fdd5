"""harness.ci_skips: under CI every kind of skip fails, with its reason; elsewhere it stays a skip; an
expected failure is not a skip. Each case runs pytest on a small test file in a process of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from harness.ci_skips import FAILED_SKIP

REPO_ROOT = Path(__file__).resolve().parents[2]

CASES = """
import pytest
from harness.ci_skips import prerequisite_missing

def test_skip_call():
    pytest.skip("no bash")

@pytest.mark.skip(reason="a mark")
def test_skip_mark():
    pass

@pytest.mark.skipif(True, reason="a condition")
def test_skipif_mark():
    pass

@pytest.fixture
def helm():
    raise prerequisite_missing("no helm")

def test_missing_prerequisite(helm):
    pass

def test_importorskip():
    pytest.importorskip("a_module_nobody_has")

@pytest.mark.xfail(reason="known", strict=True)
def test_expected_failure():
    assert False

def test_passes():
    pass
"""

MODULE_SKIP = """
import pytest
pytest.skip("the whole module", allow_module_level=True)

def test_never_collected():
    pass
"""


def _pytest(tmp_path: Path, source: str, ci: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_cases.py").write_text(source)
    env = {**os.environ, "CI": ci, "PYTHONPATH": str(REPO_ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTEST_ADDOPTS", None)
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "harness.ci_skips",
        "-p",
        "no:cacheprovider",
        "-rA",
        "-q",
    ]
    return subprocess.run(
        [*command, "-c", os.devnull, "--rootdir", str(tmp_path), str(tmp_path / "test_cases.py")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
        env=env,
    )


def _lines(output: str, word: str) -> list[str]:
    return sorted(line for line in output.splitlines() if line.startswith(f"{word} "))


def test_under_ci_every_skip_fails_with_its_reason(tmp_path: Path) -> None:
    result = _pytest(tmp_path, CASES, ci="true")
    assert result.returncode == 1, result.stdout
    # A skip in a test's call fails it; one in its setup (a mark, a fixture) is an error of the setup.
    assert _lines(result.stdout, "FAILED") == [
        f"FAILED test_cases.py::test_importorskip - {FAILED_SKIP}: could not import 'a_module_nobody_has': "
        "No module named 'a_module_nobody_has'",
        f"FAILED test_cases.py::test_skip_call - {FAILED_SKIP}: no bash",
    ]
    assert _lines(result.stdout, "ERROR") == [
        f"ERROR test_cases.py::test_missing_prerequisite - Failed: {FAILED_SKIP}: no helm",
        f"ERROR test_cases.py::test_skip_mark - {FAILED_SKIP}: a mark",
        f"ERROR test_cases.py::test_skipif_mark - {FAILED_SKIP}: a condition",
    ]
    assert _lines(result.stdout, "XFAIL") == ["XFAIL test_cases.py::test_expected_failure - known"]
    assert _lines(result.stdout, "PASSED") == ["PASSED test_cases.py::test_passes"]
    assert "2 failed, 1 passed, 1 xfailed, 3 errors" in result.stdout


def test_elsewhere_a_skip_stays_a_skip(tmp_path: Path) -> None:
    result = _pytest(tmp_path, CASES, ci="")
    assert result.returncode == 0, result.stdout
    assert _lines(result.stdout, "FAILED") == []
    assert "1 passed, 5 skipped, 1 xfailed" in result.stdout


def test_under_ci_a_module_skipped_at_collection_fails(tmp_path: Path) -> None:
    result = _pytest(tmp_path, MODULE_SKIP, ci="true")
    assert result.returncode != 0, result.stdout
    assert f"{FAILED_SKIP}: the whole module" in result.stdout
    assert "1 error" in result.stdout
    assert _pytest(tmp_path, MODULE_SKIP, ci="").returncode == 5  # no tests ran, none failed
