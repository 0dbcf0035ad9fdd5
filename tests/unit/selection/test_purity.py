"""The selection core stays pure: importing it loads no Kubernetes client, no Kopf and no HTTP stack.

(import-linter checks the static imports; this checks what an import really loads, transitive ones included.)
"""

from __future__ import annotations

import subprocess
import sys

CORE = [
    "ome_selector.api",
    "ome_selector.api.loading",
    "ome_selector.api.manifests",
    "ome_selector.catalog",
    "ome_selector.selection.explain",
    "ome_selector.selection.outcome",
    "ome_selector.selection.ranking",
    "ome_selector.selection.messages",
    "ome_selector.review.lint",
    "ome_selector.review.whatif",
]
FORBIDDEN = [
    "kopf",
    "kubernetes",
    "kubernetes_asyncio",
    "aiohttp",
    "requests",
    "urllib3",
    "ome_selector.operator",
    "ome_selector.webhook",
    "ome_selector.cli",
]


def test_importing_the_core_loads_nothing_forbidden() -> None:
    code = (
        "import sys\n"
        + "".join(f"import {module}\n" for module in CORE)
        + f"print(sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r} or m in {FORBIDDEN!r}))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]", result.stdout


def test_selection_never_loads_the_catalog() -> None:
    # The catalog is a layer above: selection reads it through the CatalogView protocol.
    code = (
        "import sys\n"
        "import ome_selector.selection.outcome, ome_selector.selection.explain\n"
        "print('ome_selector.catalog' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
