"""`kubectl ome-selector status`: every InferenceService's model, runtime and RuntimeReady, on either set of
CRDs.

OME's own CRDs have no printer column for RuntimeReady, so `kubectl get inferenceservices -o wide` shows the
outcome only with ome-selector's CRDs. This command reads the stored objects instead, through one consistent
listing of InferenceServices (`-n`, else the context's namespace; `-A` every namespace; `-l` a label
selector, as kubectl), and shows for each the model, the runtime it names (`spec.runtime.name`) or, when it
names none, the runtime its `RuntimeSelected` condition stands for, and the RuntimeReady status, reason and
(`-o wide`, `-o json`) message — whoever wrote the condition (ome-selector, or OME v1.3's controller beside
it).

The selected runtime is not read out of the message's text: the same listing holds the models and runtimes,
the pure selection core evaluates the InferenceService on them (as the operator does), and its runtime is
shown when the stored condition is exactly the verdict (reason and message). A condition that is stale,
another writer's, or from a catalog the listing does not hold (``-f`` with InferenceServices only) shows no
runtime rather than a guess (SPEC §6).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from ome_selector.api.loading import LoadError, load_resource
from ome_selector.api.resources import InferenceService, Kind
from ome_selector.catalog.catalog import Catalog
from ome_selector.cli.arguments import (
    add_cluster_arguments,
    add_files_argument,
    add_namespace_arguments,
    add_output_argument,
    no_headers,
)
from ome_selector.cli.output import JsonPathError, is_generic, object_name, render_generic
from ome_selector.cli.render import render_table
from ome_selector.cli.sources import FileSource, RawObject, SourceError
from ome_selector.selection.outcome import CONDITION_TYPE, OutcomeKind, evaluate

__all__ = [
    "STATUS_OUTPUTS",
    "StatusRow",
    "add_status_parser",
    "render_status",
    "status_command",
    "status_row",
    "status_rows",
    "verdict_runtimes",
]

EXIT_OK = 0
EXIT_ERROR = 1
STATUS_OUTPUTS = ("table", "wide", "json")
COLUMNS = ("NAME", "MODEL", "RUNTIME", "RUNTIMEREADY", "REASON")
EMPTY = "-"

_USAGE = (
    "%(prog)s [-n NAMESPACE | -A] [-l SELECTOR | -f PATH...] [-o table|wide|json|name|jsonpath=TEMPLATE]\n"
    "       [--no-headers] [--kubeconfig PATH] [--context NAME] [--request-timeout DURATION] [-h]"
)

_DESCRIPTION = """\
Show every InferenceService's model, its runtime and its RuntimeReady condition (status, reason; the message
with -o wide or -o json), read from the cluster through one consistent listing. It works on ome-selector's
CRDs and on OME's own, whose printer columns do not show RuntimeReady.

RUNTIME is the runtime the InferenceService names (spec.runtime.name), else the one runtime selection picks
from the models and runtimes of the same listing when its RuntimeReady is exactly that verdict (a stale
condition, or another writer's, shows none), else "-". The namespace is -n, else the context's, else
"default"; -A lists every namespace.
With -f (files, directories, - for stdin; e.g. the output of kubectl get -o json) only those objects are read,
never the cluster: every namespace they hold unless -n."""

_EPILOG = """\
examples:
  # Every InferenceService of every namespace, with the message
  kubectl ome-selector status -A -o wide

  # One team's, selected by label, as JSON
  kubectl ome-selector status -n team-a -l app=chat -o json

  # Each InferenceService and its runtime, one a line, for a script
  kubectl ome-selector status -A -o jsonpath='{range .items[*]}{.namespace}/{.name} {.runtime}{"\\n"}{end}'

  # What a saved listing held (with the catalog, so that RUNTIME can be derived)
  kubectl get isvc,basemodels,clusterbasemodels,servingruntimes,clusterservingruntimes -A -o json > all.json
  kubectl ome-selector status -f all.json

exit status: 0 when it could list (also when there is nothing to list), 1 on a usage or cluster error."""


@dataclass(frozen=True)
class StatusRow:
    """One InferenceService as `kubectl ome-selector status` shows it; None where the object has nothing."""

    namespace: str
    name: str
    model: str | None
    runtime: str | None
    #: ``named`` (spec.runtime.name) or ``selected`` (the runtime of a RuntimeSelected condition that is the
    #: selection core's verdict on the listed catalog); None without a runtime.
    runtime_source: str | None
    #: The kind of a selected runtime; of a named one, spec.runtime.kind as stored (None when absent).
    runtime_kind: str | None
    status: str | None
    reason: str | None
    message: str | None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _condition(status: object) -> Mapping[str, Any]:
    conditions = _mapping(status).get("conditions")
    for condition in conditions if isinstance(conditions, list) else ():
        if isinstance(condition, Mapping) and condition.get("type") == CONDITION_TYPE:
            return condition
    return {}


#: The runtime (kind, name) the selection core selects for an InferenceService (namespace, name), with the
#: condition it would write (reason, message): what :func:`verdict_runtimes` derives.
Verdicts = Mapping[tuple[str, str], tuple[tuple[str, str], tuple[str, str]]]


def verdict_runtimes(
    bodies: Iterable[Mapping[str, Any]],
) -> dict[tuple[str, str], tuple[tuple[str, str], tuple[str, str]]]:
    """For each listed InferenceService that auto-selection gives a runtime, that runtime and the condition
    (reason, message) the core's verdict writes, evaluated by the selection core on the listed models and
    runtimes alone. An object that does not load is left out (its row still shows what it holds)."""
    catalog = Catalog()
    for body in bodies:
        try:
            resource = load_resource(body)
        except LoadError:
            continue
        if resource is not None:
            catalog.upsert(resource)
    found: dict[tuple[str, str], tuple[tuple[str, str], tuple[str, str]]] = {}
    for resource in catalog:
        if not isinstance(resource, InferenceService) or resource.runtime_name is not None:
            continue
        outcome = evaluate(catalog, resource)
        if outcome is None or outcome.kind is not OutcomeKind.RUNTIME_SELECTED or outcome.runtime is None:
            continue
        runtime = outcome.runtime
        found[(resource.namespace, resource.name)] = (
            (runtime.kind.value, runtime.name),
            (outcome.reason, outcome.message),
        )
    return found


def status_row(body: Mapping[str, Any], verdicts: Verdicts | None = None) -> StatusRow:
    """The row of one stored InferenceService (any shape: fields of the wrong type read as absent); the
    runtime of an InferenceService that names none comes from ``verdicts`` (:func:`verdict_runtimes`), shown
    only when the stored condition is that verdict."""
    metadata, spec = _mapping(body.get("metadata")), _mapping(body.get("spec"))
    runtime_spec = _mapping(spec.get("runtime"))
    condition = _condition(body.get("status"))
    message = _text(condition.get("message"))
    runtime, source, kind = _text(runtime_spec.get("name")), None, _text(runtime_spec.get("kind"))
    namespace, name = str(metadata.get("namespace") or ""), str(metadata.get("name") or "")
    if runtime is not None:
        source = "named"
    else:
        kind = None
        verdict = (verdicts or {}).get((namespace, name))
        if verdict is not None and verdict[1] == (condition.get("reason"), message):
            (kind, runtime), source = verdict[0], "selected"
    return StatusRow(
        namespace=namespace,
        name=name,
        model=_text(_mapping(spec.get("model")).get("name")),
        runtime=runtime,
        runtime_source=source,
        runtime_kind=kind,
        status=_text(condition.get("status")),
        reason=_text(condition.get("reason")),
        message=message,
    )


def status_rows(bodies: Iterable[Mapping[str, Any]]) -> list[StatusRow]:
    """The rows of the listed InferenceServices, by namespace and name (as kubectl orders them); the other
    listed objects (models, runtimes) are the catalog their selected runtimes are derived from."""
    listed = list(bodies)
    verdicts = verdict_runtimes(listed)
    rows = (status_row(body, verdicts) for body in listed if body.get("kind") == Kind.INFERENCE_SERVICE.value)
    return sorted(rows, key=lambda row: (row.namespace, row.name))


def render_status(rows: list[StatusRow], output: str, *, all_namespaces: bool, headers: bool = True) -> str:
    """What `kubectl ome-selector status` prints on stdout: the table (empty without rows), the JSON
    document, or (``-o name``, ``-o jsonpath=…``) what kubectl makes of them."""
    if output == "json" or is_generic(output):
        document = {"items": [asdict(row) for row in rows]}
        if is_generic(output):
            names = (object_name(Kind.INFERENCE_SERVICE.value, row.name) for row in rows)
            return render_generic(output, document, names)
        return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    if not rows:
        return ""
    header = ("NAMESPACE",) * all_namespaces + COLUMNS + ("MESSAGE",) * (output == "wide")
    table = []
    for row in rows:
        cells = [row.name, row.model, row.runtime, row.status, row.reason]
        if output == "wide":
            cells.append(row.message)
        table.append(((row.namespace,) * all_namespaces) + tuple(cell or EMPTY for cell in cells))
    return render_table(header, table, headers=headers)


def add_status_parser(commands: argparse._SubParsersAction[Any]) -> None:
    """Register `status` among the `kubectl ome-selector` commands."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "status",
        usage=_USAGE,
        help="show every InferenceService's model, runtime and RuntimeReady (on OME's CRDs too)",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_namespace_arguments(parser, subject="InferenceServices")
    parser.add_argument(
        "-l", "--selector", metavar="SELECTOR", help="label selector, as kubectl's (e.g. app=chat,tier!=dev)"
    )
    add_files_argument(parser)
    add_output_argument(parser, STATUS_OUTPUTS)
    add_cluster_arguments(parser, when="without -f")
    parser.set_defaults(handler=status_command)


#: What status lists: the catalog first, as the operator lists it, then the InferenceServices.
_CATALOG_KINDS = (
    Kind.CLUSTER_SERVING_RUNTIME,
    Kind.SERVING_RUNTIME,
    Kind.CLUSTER_BASE_MODEL,
    Kind.BASE_MODEL,
)


def _read(args: argparse.Namespace) -> tuple[list[RawObject], str]:
    """The InferenceServices to show, with the models and runtimes beside them, and where they were looked for
    (for "No InferenceServices found")."""
    if args.filenames:
        if args.selector:
            raise SourceError("-l selects from the cluster; it cannot be combined with -f")
        held = FileSource(tuple(args.filenames), args.namespace or "default").read()
        found = [
            raw
            for raw in held
            if raw.body.get("kind") != Kind.INFERENCE_SERVICE.value
            or not args.namespace
            or _mapping(raw.body.get("metadata")).get("namespace") == args.namespace
        ]
        return found, f"namespace {args.namespace}" if args.namespace else "the files"
    from ome_selector.cli.cluster_source import ClusterSource  # noqa: PLC0415 - only live mode loads the client

    def source(kinds: tuple[Kind, ...], selector: str | None) -> ClusterSource:
        return ClusterSource(
            args.namespace,
            args.kubeconfig,
            args.context,
            all_namespaces=args.all_namespaces,
            kinds=kinds,
            label_selector=selector,
            request_timeout=args.request_timeout,
        )

    if not args.selector:
        # One consistent listing of the InferenceServices and the catalog they were evaluated on.
        everything = source((*_CATALOG_KINDS, Kind.INFERENCE_SERVICE), None)
        return everything.read(), _where(args, everything.namespace)
    # A label selector picks InferenceServices only; the catalog is listed beside them, unselected.
    isvcs = source((Kind.INFERENCE_SERVICE,), args.selector)
    catalog = source(_CATALOG_KINDS, None)
    return isvcs.read() + catalog.read(), _where(args, isvcs.namespace)


def _where(args: argparse.Namespace, namespace: str) -> str:
    return "any namespace" if args.all_namespaces else f"namespace {namespace}"


def status_command(args: argparse.Namespace) -> int:
    """Run `kubectl ome-selector status` for the parsed ``args``; returns the exit status."""
    try:
        listed, where = _read(args)
    except SourceError as error:
        sys.stderr.write(f"error: {error}\n")
        return EXIT_ERROR
    rows = status_rows(raw.body for raw in listed)
    several = args.all_namespaces or (bool(args.filenames) and not args.namespace)
    try:
        text = render_status(rows, args.output, all_namespaces=several, headers=not no_headers(args))
    except JsonPathError as error:
        sys.stderr.write(f"error: {error}\n")
        return EXIT_ERROR
    sys.stdout.write(text)
    sys.stdout.flush()
    if not rows and args.output in ("table", "wide"):
        sys.stderr.write(f"No InferenceServices found in {where}.\n")
    return EXIT_OK
