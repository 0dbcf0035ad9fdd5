"""`kubectl ome status`: every InferenceService's model, runtime and RuntimeReady, on either set of CRDs.

OME's own CRDs have no printer column for RuntimeReady, so `kubectl get inferenceservices -o wide` shows the
outcome only with ome-selector's CRDs. This command reads the stored objects instead, through one consistent
listing of InferenceServices (`-n`, else the context's namespace; `-A` every namespace; `-l` a label
selector, as kubectl), and shows for each the model, the runtime it names (`spec.runtime.name`) or, when it
names none, the one the condition says was selected (SPEC §5 `selected <Kind> <name> (score <n>)`), and the
RuntimeReady status, reason and (`-o wide`, `-o json`) message — whoever wrote the condition (ome-selector,
or OME v1.3's controller beside it).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from ome_selector.api.resources import Kind
from ome_selector.cli.arguments import (
    add_cluster_arguments,
    add_files_argument,
    add_namespace_arguments,
    add_output_argument,
)
from ome_selector.cli.render import render_table
from ome_selector.cli.sources import FileSource, RawObject, SourceError
from ome_selector.selection.messages import selected_runtime
from ome_selector.selection.outcome import CONDITION_TYPE

__all__ = [
    "STATUS_OUTPUTS",
    "StatusRow",
    "add_status_parser",
    "render_status",
    "status_command",
    "status_row",
    "status_rows",
]

EXIT_OK = 0
EXIT_ERROR = 1
STATUS_OUTPUTS = ("table", "wide", "json")
COLUMNS = ("NAME", "MODEL", "RUNTIME", "RUNTIMEREADY", "REASON")
EMPTY = "-"

_USAGE = (
    "%(prog)s [-n NAMESPACE | -A] [-l SELECTOR | -f PATH...] [-o table|wide|json]\n"
    "       [--kubeconfig PATH] [--context NAME] [-h]"
)

_DESCRIPTION = """\
Show every InferenceService's model, its runtime and its RuntimeReady condition (status, reason; the message
with -o wide or -o json), read from the cluster through one consistent listing. It works on ome-selector's
CRDs and on OME's own, whose printer columns do not show RuntimeReady.

RUNTIME is the runtime the InferenceService names (spec.runtime.name), else the one its condition says was
auto-selected, else "-". The namespace is -n, else the context's, else "default"; -A lists every namespace.
With -f (files, directories, - for stdin; e.g. the output of kubectl get -o json) only those objects are read,
never the cluster: every namespace they hold unless -n."""

_EPILOG = """\
examples:
  # Every InferenceService of every namespace, with the message
  kubectl ome status -A -o wide

  # One team's, selected by label, as JSON
  kubectl ome status -n team-a -l app=chat -o json

  # What a saved listing held
  kubectl get inferenceservices -A -o json > isvcs.json && kubectl ome status -f isvcs.json

exit status: 0 when it could list (also when there is nothing to list), 1 on a usage or cluster error."""


@dataclass(frozen=True)
class StatusRow:
    """One InferenceService as `kubectl ome status` shows it; None where the object has nothing."""

    namespace: str
    name: str
    model: str | None
    runtime: str | None
    #: ``named`` (spec.runtime.name) or ``selected`` (from the condition's message); None without a runtime.
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


def status_row(body: Mapping[str, Any]) -> StatusRow:
    """The row of one stored InferenceService (any shape: fields of the wrong type read as absent)."""
    metadata, spec = _mapping(body.get("metadata")), _mapping(body.get("spec"))
    runtime_spec = _mapping(spec.get("runtime"))
    condition = _condition(body.get("status"))
    message = _text(condition.get("message"))
    runtime, source, kind = _text(runtime_spec.get("name")), None, _text(runtime_spec.get("kind"))
    if runtime is not None:
        source = "named"
    else:
        kind = None
        selected = selected_runtime(message) if message is not None else None
        if selected is not None:
            (kind, runtime), source = selected, "selected"
    return StatusRow(
        namespace=str(metadata.get("namespace") or ""),
        name=str(metadata.get("name") or ""),
        model=_text(_mapping(spec.get("model")).get("name")),
        runtime=runtime,
        runtime_source=source,
        runtime_kind=kind,
        status=_text(condition.get("status")),
        reason=_text(condition.get("reason")),
        message=message,
    )


def status_rows(bodies: Iterable[Mapping[str, Any]]) -> list[StatusRow]:
    """The rows of the listed InferenceServices, by namespace and name (as kubectl orders them)."""
    return sorted((status_row(body) for body in bodies), key=lambda row: (row.namespace, row.name))


def render_status(rows: list[StatusRow], output: str, *, all_namespaces: bool) -> str:
    """What `kubectl ome status` prints on stdout: the table (empty without rows) or the JSON document."""
    if output == "json":
        document = {"items": [asdict(row) for row in rows]}
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
    return render_table(header, table)


def add_status_parser(commands: argparse._SubParsersAction[Any]) -> None:
    """Register `status` among the `kubectl ome` commands."""
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


def _read(args: argparse.Namespace) -> tuple[list[RawObject], str]:
    """The InferenceServices to show and where they were looked for (for "No InferenceServices found")."""
    if args.filenames:
        if args.selector:
            raise SourceError("-l selects from the cluster; it cannot be combined with -f")
        held = FileSource(tuple(args.filenames), args.namespace or "default").read()
        found = [
            raw
            for raw in held
            if raw.body.get("kind") == Kind.INFERENCE_SERVICE.value
            and (not args.namespace or _mapping(raw.body.get("metadata")).get("namespace") == args.namespace)
        ]
        return found, f"namespace {args.namespace}" if args.namespace else "the files"
    from ome_selector.cli.cluster_source import ClusterSource  # noqa: PLC0415 - only live mode loads the client

    source = ClusterSource(
        args.namespace,
        args.kubeconfig,
        args.context,
        all_namespaces=args.all_namespaces,
        kinds=(Kind.INFERENCE_SERVICE,),
        label_selector=args.selector or None,
    )
    listed = source.read()
    return listed, "any namespace" if args.all_namespaces else f"namespace {source.namespace}"


def status_command(args: argparse.Namespace) -> int:
    """Run `kubectl ome status` for the parsed ``args``; returns the exit status."""
    try:
        listed, where = _read(args)
    except SourceError as error:
        sys.stderr.write(f"error: {error}\n")
        return EXIT_ERROR
    rows = status_rows(raw.body for raw in listed)
    several = args.all_namespaces or (bool(args.filenames) and not args.namespace)
    sys.stdout.write(render_status(rows, args.output, all_namespaces=several))
    sys.stdout.flush()
    if not rows and args.output != "json":
        sys.stderr.write(f"No InferenceServices found in {where}.\n")
    return EXIT_OK
