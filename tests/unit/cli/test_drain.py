"""`ome-selector drain`, the pod's preStop hook: it signals the operator's process, then waits."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from ome_selector.cli.ome_selector import main

#: A process standing in for the operator: it writes a file when the drain signal arrives, then exits.
STAND_IN = """
import signal, sys, time
from pathlib import Path
from ome_selector.operator.signals import DRAIN_SIGNAL
signal.signal(DRAIN_SIGNAL, lambda *_: (Path(sys.argv[1]).write_text("drained"), sys.exit(0)))
print("ready", flush=True)
time.sleep(60)
"""


def test_the_operator_process_gets_the_drain_signal_and_the_hook_waits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "drained"
    waits: list[float] = []
    sleep = time.sleep

    def recorded(seconds: float) -> None:  # the hook's wait, as asked for, without timing it
        waits.append(seconds)
        sleep(seconds)

    monkeypatch.setattr(time, "sleep", recorded)
    with subprocess.Popen(
        [sys.executable, "-c", STAND_IN, str(marker)], stdout=subprocess.PIPE, text=True
    ) as operator:
        assert operator.stdout is not None
        assert operator.stdout.readline() == "ready\n"
        assert main(["drain", "--pid", str(operator.pid), "--seconds", "0.2"]) == 0
        assert waits == [0.2]
        assert operator.wait(timeout=20) == 0
    assert marker.read_text() == "drained"


def test_a_process_that_is_not_there_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    assert main(["drain", "--pid", str(gone.pid), "--seconds", "0"]) == 1
    assert capsys.readouterr().err == (
        f"ome-selector: error: cannot drain process {gone.pid}: No such process\n"
    )


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--pid", "0"], "expected a process id, got '0'"),
        (["--pid", "-1"], "expected a process id, got '-1'"),
        (["--seconds", "-1"], "expected seconds from 0 to 600, got '-1'"),
        (["--seconds", "nan"], "expected seconds from 0 to 600, got 'nan'"),
        (["--seconds", "3601"], "expected seconds from 0 to 600, got '3601'"),
    ],
)
def test_a_process_group_or_a_wait_out_of_range_is_refused(
    arguments: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["drain", *arguments])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err
