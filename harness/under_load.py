"""The report of ``hack/test-under-load.sh``: each run's result and duration, and every test that failed.

The script leaves, per run N, ``run-N.log`` (all that ``make venv`` and ``make test`` printed) and
``run-N.status``: one line, the exit status, the seconds ``make test`` took and the seconds the clone and its
``make venv`` took before it. ``python -m harness.under_load DIR --run N`` prints run N's line;
``python -m harness.under_load DIR`` prints every run's line, how many passed, and each test that failed or
errored at least once, with how often, from pytest's short test summary (``-ra`` in pyproject.toml).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Run", "failed_tests", "main", "read_run", "report", "run_line"]

#: A line of pytest's short test summary that names a failed test: ``FAILED id - message`` or ``ERROR id``.
_FAILED = re.compile(r"^(?:FAILED|ERROR) (?P<test>\S+)")
#: pytest's last line: ``1 failed, 2761 passed in 386.87s (0:06:26)``, between ``=`` rules or bare (-q).
_OUTCOME = re.compile(r"^=*\s*(?P<outcome>(?:\d+ \w+(?:, )?)+) in [\d.]+s\b")


@dataclass(frozen=True)
class Run:
    """One ``make test``: its number, exit status, seconds, the tests that failed, pytest's counts, and the
    seconds the fresh clone's setup (clone and ``make venv``) took before it."""

    number: int
    status: int
    seconds: float
    failed: tuple[str, ...]
    outcome: str | None
    setup_seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return self.status == 0


def failed_tests(log: Iterable[str]) -> tuple[str, ...]:
    """The tests a pytest output names as failed or errored, each once, in the order first named."""
    seen: dict[str, None] = {}
    for line in log:
        if match := _FAILED.match(line):
            seen.setdefault(match["test"])
    return tuple(seen)


def _outcome(log: Sequence[str]) -> str | None:
    """pytest's counts (``1 failed, 2761 passed``) from its last summary line, if it got that far."""
    for line in reversed(log):
        if match := _OUTCOME.match(line.strip()):
            return match["outcome"]
    return None


def read_run(directory: Path, number: int) -> Run:
    """Run ``number``'s record in ``directory`` (a run that left no status line counts as failed)."""
    log_path = directory / f"run-{number}.log"
    log = log_path.read_text(errors="replace").splitlines() if log_path.is_file() else []
    status_path = directory / f"run-{number}.status"
    fields = status_path.read_text().split() if status_path.is_file() else []
    if len(fields) == 3 and fields[0].isdigit() and all(_is_number(field) for field in fields[1:]):
        status, seconds, setup = int(fields[0]), float(fields[1]), float(fields[2])
    else:
        status, seconds, setup = 1, 0.0, 0.0
    return Run(number, status, seconds, failed_tests(log), _outcome(log), setup)


def _is_number(text: str) -> bool:
    return text.replace(".", "", 1).isdigit()


def _duration(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}m{rest:02d}s"


def run_line(run: Run, total: int) -> str:
    """``run 2/5: passed in 6m12s (2762 passed; clone and venv 1m40s before)``, or FAILED and the status."""
    result = "passed" if run.passed else f"FAILED (exit {run.status})"
    details = [run.outcome] if run.outcome else []
    details.append(f"clone and venv {_duration(run.setup_seconds)} before")
    return f"run {run.number}/{total}: {result} in {_duration(run.seconds)} ({'; '.join(details)})"


def report(runs: Sequence[Run]) -> str:
    """Every run's line, how many passed, and each test that failed at least once (most often first)."""
    lines = [run_line(run, len(runs)) for run in runs]
    passed = sum(run.passed for run in runs)
    lines.append(f"passed {passed} of {len(runs)}")
    counts = Counter(test for run in runs for test in run.failed)
    if counts:
        lines.append("tests that failed at least once (runs failed of runs):")
        order = sorted(counts, key=lambda test: (-counts[test], test))
        lines += [f"  {counts[test]} of {len(runs)}  {test}" for test in order]
    failed_without_a_test = [run.number for run in runs if not run.passed and not run.failed]
    if failed_without_a_test:
        numbers = ", ".join(str(number) for number in failed_without_a_test)
        lines.append(
            f"runs that failed outside pytest's tests (lint, types, setup; see their logs): {numbers}"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.under_load", description=__doc__)
    parser.add_argument("directory", type=Path, help="where the runs' logs and status lines are")
    parser.add_argument("--runs", type=int, help="how many runs there were (default: as many as logged)")
    parser.add_argument("--run", type=int, help="print only this run's line")
    args = parser.parse_args(argv)
    directory: Path = args.directory
    total = args.runs or len(list(directory.glob("run-*.status")))
    if args.run is not None:
        sys.stdout.write(run_line(read_run(directory, args.run), total) + "\n")
        return 0
    runs = [read_run(directory, number) for number in range(1, total + 1)]
    sys.stdout.write(report(runs))
    return 0 if runs and all(run.passed for run in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
