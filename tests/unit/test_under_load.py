"""hack/test-under-load.sh and its report (harness.under_load): the failed tests read from pytest's summary,
each run's line, the busy processes stopped with the script and ending by themselves when it is killed.

The script's tests run it against a one-commit repository whose ``make`` is a stand-in (``MAKE``), with one
busy process and a short bound, so that they cost seconds, not a ``make test``."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harness.under_load import Run, failed_tests, main, read_run, report, run_line

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "hack" / "test-under-load.sh"

SUMMARY = """\
=========================== short test summary info ============================
SKIPPED [1] tests/unit/x.py:3: no bash
FAILED tests/unit/cli/test_a.py::test_one - AssertionError: assert 1 == 2
ERROR tests/integration/test_b.py::test_two[ours] - TimeoutError
FAILED tests/unit/cli/test_a.py::test_one - AssertionError: again
XFAIL tests/unit/x.py::test_known - reason
1 failed, 2761 passed, 1 skipped, 1 error in 386.87s (0:06:26)
"""
FIRST = "tests/unit/cli/test_a.py::test_one"
SECOND = "tests/integration/test_b.py::test_two[ours]"
SUMMARY_COUNTS = "1 failed, 2761 passed, 1 skipped, 1 error"


@pytest.mark.parametrize(
    ("log", "expected"),
    [
        pytest.param(SUMMARY, (FIRST, SECOND), id="failed and errored, each once, in order"),
        pytest.param("FAILED tests/t.py::test_x\n", ("tests/t.py::test_x",), id="without a message"),
        pytest.param("tests/t.py::test_x FAILED\n  FAILED indented\n", (), id="progress lines are not it"),
        pytest.param("2762 passed in 300.00s\n", (), id="nothing failed"),
        pytest.param("", (), id="no output"),
    ],
)  # fmt: skip
def test_failed_tests(log: str, expected: tuple[str, ...]) -> None:
    assert failed_tests(log.splitlines()) == expected


def _record(directory: Path, number: int, log: str | None, status: str | None) -> None:
    if log is not None:
        (directory / f"run-{number}.log").write_text(log)
    if status is not None:
        (directory / f"run-{number}.status").write_text(status)


@pytest.mark.parametrize(
    ("log", "status", "expected"),
    [
        pytest.param(SUMMARY, "2 412 95\n", Run(1, 2, 412.0, (FIRST, SECOND), SUMMARY_COUNTS, 95.0),
                     id="a failed run"),
        pytest.param("== 2762 passed in 301.2s ==\n", "0 301 80", Run(1, 0, 301.0, (), "2762 passed", 80.0),
                     id="a passed run"),
        pytest.param("make: *** [lint] Error 1\n", "2 20 90", Run(1, 2, 20.0, (), None, 90.0),
                     id="before pytest"),
        pytest.param(None, None, Run(1, 1, 0.0, (), None, 0.0), id="nothing recorded: failed"),
        pytest.param("", "0 x 1", Run(1, 1, 0.0, (), None, 0.0), id="a garbled status: failed"),
        pytest.param("", "-1 3 1", Run(1, 1, 0.0, (), None, 0.0), id="a negative status: failed"),
    ],
)  # fmt: skip
def test_read_run(tmp_path: Path, log: str | None, status: str | None, expected: Run) -> None:
    _record(tmp_path, 1, log, status)
    assert read_run(tmp_path, 1) == expected


def test_run_lines() -> None:
    passed = Run(2, 0, 372.4, (), "2762 passed", 100.0)
    failed = Run(3, 2, 61.0, (), None, 5.0)
    assert run_line(passed, 5) == "run 2/5: passed in 6m12s (2762 passed; clone and venv 1m40s before)"
    assert run_line(failed, 5) == "run 3/5: FAILED (exit 2) in 1m01s (clone and venv 0m05s before)"


def test_report_counts_each_failed_test_over_the_runs() -> None:
    runs = [
        Run(1, 2, 400.0, ("tests/a.py::test_x", "tests/b.py::test_y"), "2 failed, 2760 passed", 60.0),
        Run(2, 0, 300.0, (), "2762 passed", 60.0),
        Run(3, 2, 390.0, ("tests/b.py::test_y",), "1 failed, 2761 passed", 60.0),
        Run(4, 2, 30.0, (), None, 60.0),
    ]
    assert report(runs).splitlines()[4:] == [
        "passed 1 of 4",
        "tests that failed at least once (runs failed of runs):",
        "  2 of 4  tests/b.py::test_y",
        "  1 of 4  tests/a.py::test_x",
        "runs that failed outside pytest's tests (lint, types, setup; see their logs): 4",
    ]
    assert report(runs[1:2]) == (
        "run 2/1: passed in 5m00s (2762 passed; clone and venv 1m00s before)\npassed 1 of 1\n"
    )


def test_main_exits_0_only_when_every_run_passed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _record(tmp_path, 1, "2762 passed in 300.00s\n", "0 300 60")
    assert main([str(tmp_path)]) == 0
    _record(tmp_path, 2, SUMMARY, "2 300 60")
    assert main([str(tmp_path)]) == 1
    assert "  1 of 2  tests/unit/cli/test_a.py::test_one\n" in capsys.readouterr().out
    assert main([str(tmp_path), "--runs", "2", "--run", "1"]) == 0
    assert capsys.readouterr().out == "run 1/2: passed in 5m00s (2762 passed; clone and venv 1m00s before)\n"
    assert main([str(tmp_path / "none")]) == 1  # no run at all is no pass


# --- the script, with a stand-in make -----------------------------------------------------------------------

#: The stand-in for make: ``venv`` succeeds; ``test`` records its CI variable and its directory, then answers
#: as the next line of $STANDIN/answers says: ``pass``, ``fail`` (a pytest summary naming one test) or
#: ``hang`` (writes $STANDIN/hanging with its pid, then runs until it is stopped).
FAKE_MAKE = """\
#!/usr/bin/env bash
set -eu
[[ $1 == venv ]] && exit 0
echo "CI=${CI:-} $PWD" >>"$STANDIN/calls"
count=$(wc -l <"$STANDIN/calls")
answer=$(sed -n "${count}p" "$STANDIN/answers")
case $answer in
  pass) echo "2762 passed in 1.00s"; exit 0 ;;
  fail) echo "FAILED tests/unit/test_x.py::test_flaky - AssertionError"; echo "1 failed, 2761 passed in 1.00s"
        exit 2 ;;
  hang) echo $$ >"$STANDIN/hanging"; exec sleep 600 ;;
esac
"""


@pytest.fixture
def standin(tmp_path: Path) -> Iterator[Path]:
    """A directory with the stand-in make, and a one-commit repository for the script to clone."""
    directory = tmp_path / "standin"
    directory.mkdir()
    make = directory / "make"
    make.write_text(FAKE_MAKE)
    make.chmod(0o755)
    source = directory / "source"
    source.mkdir()
    (source / "README").write_text("a repository to clone\n")
    git = ["git", "-C", str(source), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    for command in (["init", "--quiet"], ["add", "README"], ["commit", "--quiet", "-m", "one"]):
        subprocess.run([*git, *command], check=True, capture_output=True, timeout=60)
    yield directory
    hanging = directory / "hanging"
    if hanging.is_file():  # never leave the stand-in running, whatever the test did
        _kill(int(hanging.read_text()))


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _environment(standin: Path, tmp_path: Path, busy_seconds: int) -> dict[str, str]:
    return {
        **os.environ,
        "MAKE": str(standin / "make"),
        "STANDIN": str(standin),
        "UNDER_LOAD_SOURCE": str(standin / "source"),
        "UNDER_LOAD_BUSY": "1",
        "UNDER_LOAD_BUSY_SECONDS": str(busy_seconds),
        "TMPDIR": str(tmp_path),
        "CI": "",
    }


def _start(
    standin: Path, tmp_path: Path, runs: int, answers: list[str], busy_seconds: int
) -> subprocess.Popen[str]:
    (standin / "answers").write_text("".join(f"{answer}\n" for answer in answers))
    return subprocess.Popen(
        [str(SCRIPT), str(runs)],
        env=_environment(standin, tmp_path, busy_seconds),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie that nobody reaped yet has ended)."""
    state = subprocess.run(
        ["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True, timeout=30, check=False
    )
    return state.returncode == 0 and not state.stdout.strip().startswith("Z")


def _wait_for(condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout:g} s: {what}"
        time.sleep(0.05)


def _busy_pids(tmp_path: Path) -> list[int]:
    files = list(tmp_path.glob("test-under-load.*/results/busy.pids"))
    return [int(line) for file in files for line in file.read_text().split()]


def test_the_script_reports_every_run_and_each_failed_test(standin: Path, tmp_path: Path) -> None:
    script = _start(standin, tmp_path, 3, ["fail", "pass", "fail"], busy_seconds=600)
    out, err = script.communicate(timeout=120)
    (results,) = tmp_path.glob("test-under-load.*/results")
    assert (script.returncode, err) == (1, "")
    lines = out.splitlines()
    assert lines[0].startswith("test-under-load: 3 run(s) of make test at ")
    assert lines[0].endswith(f", 1 busy processes; logs in {results}")
    assert [line.split(" in ")[0] for line in lines[1:4]] == [
        "run 1/3: FAILED (exit 2)",
        "run 2/3: passed",
        "run 3/3: FAILED (exit 2)",
    ]
    assert lines[4] == ""
    assert lines[5:] == [
        *lines[1:4],
        "passed 1 of 3",
        "tests that failed at least once (runs failed of runs):",
        "  2 of 3  tests/unit/test_x.py::test_flaky",
    ]
    # Each run in a fresh clone (removed afterwards), under CI=true; every busy process stopped.
    calls = (standin / "calls").read_text().splitlines()
    assert [call.split()[0] for call in calls] == ["CI=true"] * 3
    assert all(call.split()[1] == str(results.parent / "clone") for call in calls)
    assert not (results.parent / "clone").exists()
    assert len(_busy_pids(tmp_path)) == 3
    assert not any(_alive(pid) for pid in _busy_pids(tmp_path))


def test_a_signal_stops_the_run_and_the_busy_processes(standin: Path, tmp_path: Path) -> None:
    script = _start(standin, tmp_path, 2, ["hang"], busy_seconds=600)
    _wait_for((standin / "hanging").is_file, "the stand-in make test to start")
    hanging = int((standin / "hanging").read_text())
    script.send_signal(signal.SIGTERM)
    script.communicate(timeout=60)
    assert script.returncode == 143
    (busy,) = _busy_pids(tmp_path)
    _wait_for(lambda: not _alive(busy) and not _alive(hanging), "the busy process and make test to stop")
    assert not list(tmp_path.glob("test-under-load.*/clone"))


def test_busy_processes_end_by_themselves_when_the_script_is_killed(standin: Path, tmp_path: Path) -> None:
    """SIGKILL leaves the script no trap to run: the busy process still ends, at its own deadline."""
    script = _start(standin, tmp_path, 1, ["hang"], busy_seconds=2)
    _wait_for((standin / "hanging").is_file, "the stand-in make test to start")
    (busy,) = _busy_pids(tmp_path)
    script.kill()
    script.wait(timeout=60)
    _kill(int((standin / "hanging").read_text()))  # make test is a job of its own, not killed with the script
    assert _alive(busy)  # orphaned: nothing stops it but its own deadline
    _wait_for(lambda: not _alive(busy), "the orphaned busy process to end at its deadline")
    script.communicate(timeout=60)


@pytest.mark.parametrize("argument", ["0", "-1", "x", "1000", ""])
def test_the_number_of_runs_is_checked(argument: str) -> None:
    result = subprocess.run([str(SCRIPT), argument], capture_output=True, text=True, timeout=60, check=False)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == "usage: hack/test-under-load.sh N   (N: how many runs of make test, 1 to 999)\n"
