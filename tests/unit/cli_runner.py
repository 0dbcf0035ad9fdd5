"""`kubectl ome-selector` run in-process for the CLI tests (the fixture is in tests/unit/cli/conftest.py)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLES = REPO_ROOT / "samples"
KUBECTL_OME = Path(sys.executable).parent / "kubectl-ome_selector"
#: For a process started with an environment of its own: its bytecode where `make test` keeps it (the
#: Makefile's PYTHONPYCACHEPREFIX), else none written; never into the work tree.
NO_PYC = (
    {"PYTHONPYCACHEPREFIX": os.environ["PYTHONPYCACHEPREFIX"]}
    if os.environ.get("PYTHONPYCACHEPREFIX")
    else {"PYTHONDONTWRITEBYTECODE": "1"}
)


class Result(NamedTuple):
    code: int
    out: str
    err: str


Run = Callable[..., Result]
