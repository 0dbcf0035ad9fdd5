"""Unit-test support: makes the helper modules next to this file (``selection_builders``) importable.

pytest runs with ``--import-mode=importlib``, which puts no test directory on ``sys.path``.
"""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
