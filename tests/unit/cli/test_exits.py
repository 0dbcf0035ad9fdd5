"""How both commands end when the reader of their output leaves, or the user presses Ctrl-C."""

from __future__ import annotations

import subprocess
import sys

from ome_selector.cli.exits import INTERRUPTED, quietly

# A command writing far more than a pipe holds, as `ome-selector cleanup --dry-run` does on a big cluster.
WRITER = """
import sys
from ome_selector.cli.exits import quietly

def command() -> int:
    for n in range(100_000):
        print(f"would delete object {n}")
    return 0

sys.exit(quietly(command, on_broken_pipe=int(sys.argv[1])))
"""


def test_a_reader_that_leaves_early_gets_no_traceback() -> None:
    with subprocess.Popen(
        [sys.executable, "-c", WRITER, "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        assert process.stdout is not None
        assert process.stderr is not None
        assert process.stdout.readline() == "would delete object 0\n"
        process.stdout.close()  # `| head -1`
        stderr = process.stderr.read()
        assert process.wait(timeout=60) == 0
    assert stderr == ""


def test_ctrl_c_ends_with_the_shells_status() -> None:
    def interrupted() -> int:
        raise KeyboardInterrupt

    assert quietly(interrupted) == INTERRUPTED == 130
    assert quietly(lambda: 3) == 3
