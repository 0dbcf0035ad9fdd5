"""`kubectl ome-selector runtime what-if`: which InferenceServices would change verdict if some objects were
applied or deleted (SPEC §11) — a CI gate for catalog changes.

The comparison is :func:`ome_selector.review.whatif.what_if`; this module reads the catalog (the
``--against`` files, else the cluster), the change (``-f``, ``--delete``), prints the changed
InferenceServices and sets the exit status.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ome_selector.api.resources import Kind, ObjectKey
from ome_selector.catalog.catalog import Catalog
from ome_selector.cli.arguments import (
    add_cluster_arguments,
    add_files_argument,
    add_kustomize_argument,
    add_namespace_arguments,
    add_output_argument,
    add_runtime_lookup_argument,
    add_subcommand,
    kind_names,
    no_headers,
)
from ome_selector.cli.output import JsonPathError, is_generic, object_name, render_generic
from ome_selector.cli.render import render_table
from ome_selector.cli.scope import object_source
from ome_selector.cli.sources import FileSource, SourceError, read_catalog, redefinition_warnings
from ome_selector.review.whatif import (
    CatalogChange,
    ChangeError,
    Verdict,
    WhatIf,
    what_if,
    what_if_document,
)
from ome_selector.selection.inheritance import RuntimeLookup

__all__ = ["WHAT_IF_OUTPUTS", "add_what_if_parser", "parse_kind", "render_what_if", "what_if_command"]

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_CHANGED = 3
WHAT_IF_OUTPUTS = ("table", "json")
COLUMNS = ("NAMESPACE", "NAME", "BEFORE", "AFTER")
ABSENT = "(absent)"

_USAGE = (
    "%(prog)s (-f CHANGE | -k DIR)... [--delete KIND/NAME]... [-n NAMESPACE | -A] [--against PATH]...\n"
    "       [-o table|json] [--fail-on-change] [--runtime-lookup v1.3|legacy] [--kubeconfig PATH]\n"
    "       [--context NAME] [-h]"
)

_DESCRIPTION = """\
Show which InferenceServices would change verdict (RuntimeReady status, reason or selected runtime) if the
objects in the -f files (and those `kubectl kustomize DIR` builds for -k DIR, as kubectl apply -k would apply
them) were applied and the --delete objects deleted, with the verdict now (BEFORE) and after (AFTER). Nothing
is applied: the verdicts are computed as the operator computes them. An object defined more than once is read
as kubectl apply leaves it: the last definition, with a warning.

The catalog is the cluster of the kubeconfig context, or with --against only those files or directories
(never the kubeconfig). -n limits the InferenceServices to one namespace, -A takes all; without either, the
context's namespace, or with --against every namespace in the files. Namespaced objects in -f files or named
by --delete without a namespace are in the -n namespace, else the context's (with --against: "default").
KIND is servingruntime, clusterservingruntime, basemodel, clusterbasemodel or inferenceservice (any case,
plural or isvc too)."""

_EPILOG = """\
examples:
  # What would this new runtime change in the cluster?
  kubectl ome-selector runtime what-if -f new-runtime.yaml -A

  # A CI gate on a catalog pull request: exit 3 when any InferenceService would change
  kubectl ome-selector runtime what-if -f catalog/runtimes/ --against catalog/ --fail-on-change

  # The same for a kustomization (kubectl on PATH builds it)
  kubectl ome-selector runtime what-if -k overlays/prod/ --against catalog/

  # Who loses their runtime if this one goes?
  kubectl ome-selector runtime what-if --delete clusterservingruntime/vllm-llama-3-2 -A

exit status: 0, or 3 with --fail-on-change when any InferenceService changes; 1 on a usage, file, cluster or
change error."""

_KIND_NAMES = kind_names(tuple(Kind))


def parse_kind(text: str) -> tuple[Kind, str]:
    """``KIND/NAME`` for ``--delete``, KIND in any case, singular, plural or short (``csr``, ``sr``, ``cbm``,
    ``bm``, ``isvc``)."""
    kind_text, slash, name = text.partition("/")
    kind = _KIND_NAMES.get(kind_text.lower())
    if not slash or not name or "/" in name:
        raise argparse.ArgumentTypeError(f"{text!r} is not KIND/NAME")
    if kind is None:
        known = ", ".join(k.value.lower() for k in Kind)
        raise argparse.ArgumentTypeError(f"unknown kind {kind_text!r} (one of {known})")
    return kind, name


def add_what_if_parser(commands: argparse._SubParsersAction[Any]) -> None:
    """Register `what-if` among the `runtime` subcommands."""
    parser = add_subcommand(
        commands,
        "what-if",
        usage=_USAGE,
        summary="show which InferenceServices a catalog change would move",
        description=_DESCRIPTION,
        epilog=_EPILOG,
    )
    add_files_argument(
        parser,
        dest="changes",
        metavar="CHANGE",
        help="objects to apply (file or directory, recursively); repeatable; - = stdin",
    )
    add_kustomize_argument(
        parser,
        dest="changes",
        help="objects to apply: what `kubectl kustomize DIR` builds (kubectl on PATH); repeatable, in "
        "command-line order with -f",
    )
    parser.add_argument(
        "--delete",
        action="append",
        dest="deletions",
        metavar="KIND/NAME",
        type=parse_kind,
        default=[],
        help="an object to delete; repeatable",
    )
    add_namespace_arguments(parser, subject="compare the InferenceServices")
    parser.add_argument(
        "--against",
        action="append",
        metavar="PATH",
        default=[],
        help="the catalog as files or directories instead of the cluster; repeatable",
    )
    add_output_argument(parser, WHAT_IF_OUTPUTS)
    parser.add_argument(
        "--fail-on-change", action="store_true", help="exit 3 when any InferenceService changes"
    )
    add_runtime_lookup_argument(parser)
    add_cluster_arguments(parser, when="live mode")
    parser.set_defaults(handler=what_if_command)


def _cell(verdict: Verdict | None) -> str:
    if verdict is None:
        return ABSENT
    return " ".join(part for part in (verdict.status, verdict.reason, verdict.runtime) if part)


def render_what_if(result: WhatIf, output: str, *, headers: bool = True) -> str:
    """What what-if prints on stdout: the table of changes (empty without any), the JSON document, or
    (``-o name``: the InferenceServices that change; ``-o jsonpath=…``) what kubectl makes of them."""
    if output == "json":
        return json.dumps(what_if_document(result), indent=2, ensure_ascii=False) + "\n"
    if is_generic(output):
        names = (object_name(Kind.INFERENCE_SERVICE.value, c.name) for c in result.changes)
        return render_generic(output, what_if_document(result), names)
    if not result.changes:
        return ""
    rows = [(c.namespace, c.name, _cell(c.before), _cell(c.after)) for c in result.changes]
    return render_table(COLUMNS, rows, headers=headers)


def _change(args: argparse.Namespace, namespace: str, warnings: list[str]) -> CatalogChange:
    applied: Catalog | tuple[()] = ()
    if args.changes:
        applied, redefined = read_catalog(FileSource(tuple(args.changes), namespace).read(), namespace)
        warnings.extend(redefinition_warnings(redefined))
    deleted = tuple(
        ObjectKey(kind, namespace if kind.namespaced else None, name) for kind, name in args.deletions
    )
    return CatalogChange(applied=tuple(applied), deleted=deleted)


def what_if_command(args: argparse.Namespace) -> int:
    """Run `kubectl ome-selector runtime what-if` for the parsed ``args``; returns the exit status."""
    if not args.changes and not args.deletions:
        sys.stderr.write("error: nothing to compare: give -f CHANGE, -k DIR or --delete KIND/NAME\n")
        return EXIT_ERROR
    warnings: list[str] = []
    try:
        source = object_source(args.against, args)
        before, redefined = read_catalog(source.read(), source.namespace)
        warnings.extend(redefinition_warnings(redefined))
        change = _change(args, source.namespace, warnings)
        lookup = RuntimeLookup(args.runtime_lookup)
        result = what_if(before, change, {args.namespace} if args.namespace else None, lookup)
    except (SourceError, ChangeError) as error:
        sys.stderr.write(f"error: {error}\n")
        return EXIT_ERROR
    for warning in warnings:
        sys.stderr.write(warning + "\n")
    try:
        text = render_what_if(result, args.output, headers=not no_headers(args))
    except JsonPathError as error:
        sys.stderr.write(f"error: {error}\n")
        return EXIT_ERROR
    sys.stdout.write(text)
    sys.stdout.flush()
    if args.output == "table":
        sys.stderr.write(f"InferenceServices: {len(result.changes)} changed, {result.unchanged} unchanged\n")
    return EXIT_CHANGED if args.fail_on_change and result.changes else EXIT_OK
