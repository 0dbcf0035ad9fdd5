"""``python -m bench``: how long the selection core takes per decision, on OME-shaped and rotating catalogs.

For each catalog (see :mod:`bench.catalogs`) it times:

- ``explain``: every runtime's verdict with its reason (the CLI's view);
- ``evaluate``: the operator's and the webhook's decision for an InferenceService, for a model some runtime
  serves and for one none serves (the capped no-runtime message), decided again and again: after the first,
  each reads the result the catalog keeps for the model (what every further InferenceService of the model
  costs);
- the first decision after a runtime changed (the runtime stored again, as a watch event does, then the
  decision: nothing kept any more), and the store alone.

Then it prints the selection-core rows with their goals. Figures are medians of batches
(see :mod:`bench.timing`); nothing here asserts a time. ``--out FILE`` also writes every figure as JSON, so
runs can be compared.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.catalogs import NAMESPACE, BenchCatalog, ome_shaped_catalog, published_catalog, rotating_catalog
from bench.timing import Timing, human, time_per_call
from ome_selector.api.loading import load_resource
from ome_selector.api.resources import InferenceService, Model
from ome_selector.selection.explain import explain
from ome_selector.selection.outcome import evaluate

GV = "ome.io/v1beta1"


def inference_service(model: Model, name: str) -> InferenceService:
    resource = load_resource(
        {
            "apiVersion": GV,
            "kind": "InferenceService",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"model": {"name": model.name}},
        }
    )
    assert isinstance(resource, InferenceService)
    return resource


@dataclass(frozen=True, slots=True)
class Figure:
    key: str
    label: str
    timing: Timing
    note: str = ""


def measure(title: str, bench: BenchCatalog) -> dict[str, Timing]:
    """Time explain, evaluate (served and orphan, memoized and after a runtime change) and one store."""
    catalog, served, orphan = bench.catalog, bench.served, bench.orphan
    served_isvc = inference_service(served, "bench-served")
    orphan_isvc = inference_service(orphan, "bench-orphan")
    catalog.upsert(served_isvc)
    catalog.upsert(orphan_isvc)
    runtimes = catalog.runtimes()
    victim = runtimes[len(runtimes) // 2]
    served_outcome, orphan_outcome = evaluate(catalog, served_isvc), evaluate(catalog, orphan_isvc)
    assert served_outcome is not None
    assert orphan_outcome is not None
    explanation = explain(catalog, served, NAMESPACE)

    def explain_with_reasons() -> None:
        for verdict in explain(catalog, served, NAMESPACE).verdicts:
            _ = verdict.reason

    def changed_then(isvc: InferenceService) -> Callable[[], object]:
        def call() -> object:
            catalog.upsert(victim)
            return evaluate(catalog, isvc)

        return call

    formats = len(catalog.runtime_profiles_for_format(NAMESPACE, served.spec.format_name))
    print(f"\n{title}: {len(explanation.verdicts):,} runtimes, {formats:,} of them name the model's format")
    figures = [
        Figure("explain", "explain (every verdict and its reason)", time_per_call(explain_with_reasons)),
        Figure(
            "evaluate",
            "evaluate, served model (memo)",
            time_per_call(lambda: evaluate(catalog, served_isvc)),
            served_outcome.message,
        ),
        Figure(
            "evaluate_none",
            "evaluate, no runtime fits (memo)",
            time_per_call(lambda: evaluate(catalog, orphan_isvc)),
            f"{orphan_outcome.reason}, {len(orphan_outcome.message)} characters",
        ),
        Figure("upsert", "store one runtime (a watch event)", time_per_call(lambda: catalog.upsert(victim))),
        Figure(
            "changed_evaluate",
            "store one runtime + evaluate, served",
            time_per_call(changed_then(served_isvc)),
        ),
        Figure(
            "changed_evaluate_none",
            "store one runtime + evaluate, no fit",
            time_per_call(changed_then(orphan_isvc)),
        ),
    ]
    for figure in figures:
        note = f"  -> {figure.note}" if figure.note else ""
        timing = figure.timing
        print(
            f"  {figure.label:<40} {human(timing.median):>10} median ({human(timing.best)} best, "
            f"{human(timing.cpu_median)} CPU){note}"
        )
    return {figure.key: figure.timing for figure in figures}


@dataclass(frozen=True, slots=True)
class IssueRow:
    """One selection-core row of the performance table."""

    what: str
    was: str
    goal_seconds: float
    measured: Timing
    cold: Timing | None

    @property
    def met(self) -> bool:
        return self.measured.median <= self.goal_seconds

    @property
    def met_in_cpu_time(self) -> bool:
        return self.measured.cpu_median <= self.goal_seconds

    def as_json(self) -> dict[str, Any]:
        return {
            "what": self.what,
            "was": self.was,
            "goal_seconds": self.goal_seconds,
            "measured": self.measured.as_json(),
            "after_a_runtime_change": self.cold.as_json() if self.cold is not None else None,
            "met": self.met,
            "met_in_cpu_time": self.met_in_cpu_time,
        }


def issue_rows(results: dict[str, dict[str, Timing]]) -> list[IssueRow]:
    ome, shaped = results["published"], results["ome-shaped-10000"]
    return [
        IssueRow(
            "evaluate, OME catalog (201 runtimes)",
            "0.5-1.4 ms",
            100e-6,
            ome["evaluate"],
            ome["changed_evaluate"],
        ),
        IssueRow(
            "evaluate, 10,000 OME-shaped runtimes",
            "41-49 ms",
            2e-3,
            shaped["evaluate"],
            shaped["changed_evaluate"],
        ),
        IssueRow("explain, OME catalog", "1.2-2.5 ms", 500e-6, ome["explain"], None),
    ]


def _verdict(met: bool) -> str:
    return "met" if met else "NOT met"


def print_issue_rows(rows: list[IssueRow]) -> None:
    print(
        "\nSelection core (medians by the wall clock and by CPU time; 'after a change' = store one "
        "runtime + the decision, wall clock):"
    )
    print(f"  {'what':<38} {'was':>11} {'goal':>10} {'now':>10} {'CPU':>10} {'after a change':>15}  verdict")
    for row in rows:
        cold = human(row.cold.median) if row.cold is not None else "-"
        print(
            f"  {row.what:<38} {row.was:>11} {'≤ ' + human(row.goal_seconds):>10} "
            f"{human(row.measured.median):>10} {human(row.measured.cpu_median):>10} {cold:>15}  "
            f"{_verdict(row.met)} (CPU: {_verdict(row.met_in_cpu_time)})"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="also write every figure to this JSON file")
    args = parser.parse_args(argv)
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")

    catalogs: list[tuple[str, str, Callable[[], BenchCatalog]]] = [
        ("published", "OME catalog, llama-3-2-3b-instruct at 3.21B", published_catalog),
        ("ome-shaped-1000", "OME-shaped, 1,000 runtimes", lambda: ome_shaped_catalog(1_000)),
        ("ome-shaped-10000", "OME-shaped, 10,000 runtimes", lambda: ome_shaped_catalog(10_000)),
        ("rotating-1000", "rotating, 1,000 runtimes", lambda: rotating_catalog(1_000)),
        ("rotating-10000", "rotating, 10,000 runtimes", lambda: rotating_catalog(10_000)),
    ]
    results: dict[str, dict[str, Timing]] = {}
    built: dict[str, float] = {}
    for key, title, build in catalogs:
        start = time.perf_counter()
        bench = build()
        built[key] = time.perf_counter() - start
        results[key] = measure(f"{title} (built in {human(built[key])})", bench)

    rows = issue_rows(results)
    print_issue_rows(rows)
    if args.out is not None:
        document = {
            "python": sys.version.split()[0],
            "machine": {
                "cpus": os.cpu_count(),
                "load_1m": os.getloadavg()[0],
                "platform": platform.platform(),
            },
            "catalogs": {
                key: {"built_seconds": built[key], **{name: t.as_json() for name, t in figures.items()}}
                for key, figures in results.items()
            },
            "issue_17": [row.as_json() for row in rows],
        }
        args.out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
        print(f"\nfigures written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
