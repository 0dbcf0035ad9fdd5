"""A pytest plugin: under CI (the ``CI`` variable set and not empty) a skipped test fails.

On a developer's machine a test whose prerequisite is missing (helm, Prometheus, bash, a Python the non-root
user can run) skips with its reason; on the build machine every prerequisite is there, so a skip there would
only hide a test that no longer runs. Every skip counts: ``pytest.skip`` in a test or fixture, a ``skip`` or
``skipif`` mark, ``pytest.importorskip``, and a module skipped at collection. An expected failure (``xfail``)
is not a skip. ``tests/conftest.py`` loads the plugin; ``raise prerequisite_missing(why)`` is the explicit
form for a test or fixture that finds a prerequisite missing.
"""

from __future__ import annotations

import os
from collections.abc import Generator

import pytest

__all__ = ["prerequisite_missing", "under_ci"]

#: What a skip under CI becomes, before the skip's own reason.
FAILED_SKIP = "skipped under CI, where every prerequisite must be present"


def under_ci() -> bool:
    return bool(os.environ.get("CI"))


def prerequisite_missing(message: str) -> BaseException:
    """What to raise when a prerequisite is missing: a failure under CI (the build machine has every
    prerequisite), else a skip with ``message``."""
    if under_ci():
        return pytest.fail.Exception(f"{FAILED_SKIP}: {message}", pytrace=False)
    return pytest.skip.Exception(message)


def _reason(longrepr: object) -> str:
    """The reason of a skip's report: pytest keeps it as (path, line, "Skipped: reason")."""
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def _fail(report: pytest.TestReport | pytest.CollectReport) -> None:
    report.outcome = "failed"
    report.longrepr = f"{FAILED_SKIP}: {_reason(report.longrepr)}"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, object, object]:
    report = yield
    expected_failure = hasattr(report, "wasxfail")
    if under_ci() and isinstance(report, pytest.TestReport) and report.skipped and not expected_failure:
        _fail(report)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, object, object]:
    report = yield
    if under_ci() and isinstance(report, pytest.CollectReport) and report.skipped:
        _fail(report)
    return report
