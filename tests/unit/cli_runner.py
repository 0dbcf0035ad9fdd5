"""`kubectl ome-selector` run in-process for the CLI tests (the fixture is in tests/unit/cli/conftest.py)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLES = REPO_ROOT / "samples"
KUBECTL_OME = Path(sys.executable).parent / "kubectl-ome_selector"


class Result(NamedTuple):
    code: int
    out: str
    err: str


Run = Callable[..., Result]
