"""``python -m bench.lint``: how long `kubectl ome-selector runtime lint` takes (SPEC §11; the goal is under 1
s for OME's published catalog).

- OME's catalog (tests/data/ome-catalog: 205 models, 201 runtimes once the four names it defines twice are
  read "later file wins"): reading and indexing the files, then :func:`~ome_selector.review.lint.lint`;
  and the whole command, ``kubectl-ome_selector runtime lint -f DIR`` in a new process, on a copy of the
  catalog without the four files whose runtimes a later file redefines (the command refuses duplicates);
- 10,000 runtimes: OME's runtimes cloned round-robin under new names (``<name>-c<k>``), with OME's
  models. Each clone overlaps its original and ties with it: the worst case for the number of findings.

Timing uses :mod:`timeit` (best of a few repeats); nothing here asserts a time.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
import timeit
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from bench.catalogs import OME_CATALOG
from bench.timing import human
from ome_selector.api.manifests import load_manifest
from ome_selector.api.resources import Resource, Runtime
from ome_selector.catalog.catalog import Catalog
from ome_selector.review.lint import Finding, lint

NAMESPACE = "default"
CLONED_RUNTIMES = 10_000


def best(call: Callable[[], object], repeat: int) -> float:
    """Seconds for one call: the best of ``repeat`` single calls (each is long enough to time alone)."""
    return min(timeit.repeat(call, repeat=repeat, number=1))


def published() -> list[Resource]:
    resources: list[Resource] = []
    for path in sorted(OME_CATALOG.rglob("*.yaml")):
        resources.extend(load_manifest(path.read_text(encoding="utf-8")))
    return resources


def cloned(resources: list[Resource], count: int) -> Catalog:
    """OME's models and ``count`` runtimes: its runtimes round-robin, the k-th round renamed ``-c<k>``."""
    catalog = Catalog.from_resources(resources)
    originals = sorted(catalog.runtimes(), key=lambda runtime: runtime.name)
    models = catalog.models()
    clones: list[Runtime] = []
    for index in range(count):
        original = originals[index % len(originals)]
        round_ = index // len(originals)
        clones.append(
            original if round_ == 0 else original.model_copy(update={"name": f"{original.name}-c{round_}"})
        )
    return Catalog.from_resources([*models, *clones])


def deduplicated_copy(target: Path) -> Path:
    """A copy of the catalog's files in ``target`` without those whose objects a later file redefines."""
    last: dict[tuple[str, str], Path] = {}
    paths = sorted(OME_CATALOG.rglob("*.yaml"))
    for path in paths:
        for resource in load_manifest(path.read_text(encoding="utf-8")):
            last[(resource.kind.value, resource.name)] = path
    kept = set(last.values())
    for path in paths:
        if path in kept:
            copy = target / path.relative_to(OME_CATALOG)
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, copy)
    return target


def command_seconds(directory: Path) -> tuple[float, int]:
    """The best wall time of ``kubectl-ome_selector runtime lint -f directory -o json`` and its exit
    status."""
    command = [
        str(Path(sys.executable).parent / "kubectl-ome_selector"),
        "runtime",
        "lint",
        "-f",
        str(directory),
        "-o",
        "json",
    ]
    times, status = [], 0
    for _ in range(3):
        started = time.perf_counter()
        status = subprocess.run(command, capture_output=True, check=False).returncode
        times.append(time.perf_counter() - started)
    return min(times), status


def counts(findings: tuple[Finding, ...]) -> str:
    tally = Counter(finding.code.value for finding in findings)
    return ", ".join(f"{code} {tally[code]}" for code in sorted(tally))


def main() -> int:
    print(f"Python {sys.version.split()[0]}; best of several runs\n")
    read = best(published, repeat=3)
    resources = published()
    index = best(lambda: Catalog.from_resources(resources), repeat=3)
    catalog = Catalog.from_resources(resources)
    findings = lint(catalog, [NAMESPACE])
    judge = best(lambda: lint(catalog, [NAMESPACE]), repeat=5)
    print(
        f"OME catalog: {len(catalog.models())} models, {len(catalog.runtimes())} runtimes, "
        f"{len(findings)} findings ({counts(findings)})"
    )
    print(f"  read and parse the YAML files      {human(read):>10}")
    print(f"  index (Catalog.from_resources)     {human(index):>10}")
    print(f"  lint                               {human(judge):>10}")
    print(f"  total                              {human(read + index + judge):>10}   (goal: under 1 s)")
    with tempfile.TemporaryDirectory() as scratch:
        seconds, status = command_seconds(deduplicated_copy(Path(scratch)))
    print(
        f"  kubectl-ome_selector runtime lint -f DIR    {human(seconds):>10}   "
        f"(a new process; exit status {status})"
    )

    started = timeit.default_timer()
    large = cloned(resources, CLONED_RUNTIMES)
    built = timeit.default_timer() - started
    findings = lint(large, [NAMESPACE])
    judge = best(lambda: lint(large, [NAMESPACE]), repeat=2)
    print(
        f"\n{CLONED_RUNTIMES:,} runtimes (OME's cloned round-robin), {len(large.models())} models: "
        f"{len(findings):,} findings ({counts(findings)})"
    )
    print(f"  index                              {human(built):>10}")
    print(f"  lint                               {human(judge):>10}")
    print(
        "Each clone overlaps its original (SIZE003) and ties with it (RANK001): overlapping pairs grow with "
        "the square of the clones per runtime; a real catalog has far fewer."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
