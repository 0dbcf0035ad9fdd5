"""How both commands end when their reader or their user stops them."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

__all__ = ["INTERRUPTED", "quietly"]

#: The shell's status for a command ended by Ctrl-C (128 + SIGINT).
INTERRUPTED = 130


def quietly(command: Callable[[], int], *, on_broken_pipe: int = 0) -> int:
    """``command()``'s status, without a traceback when the reader of stdout left (``... | head``) or the user
    pressed Ctrl-C."""
    try:
        return command()
    except BrokenPipeError:
        # Send stdout to /dev/null so that the interpreter's flush at exit stays quiet too.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return on_broken_pipe
    except KeyboardInterrupt:
        return INTERRUPTED
