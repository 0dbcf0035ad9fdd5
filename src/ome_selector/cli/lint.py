"""`kubectl ome-selector runtime lint`: the findings of SPEC §11 for a catalog, from files or the live
cluster.

The findings come from :func:`ome_selector.review.lint.lint`; this module reads the objects, picks the
namespaces (:mod:`.scope`), prints the table or the JSON document and sets the exit status.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from ome_selector.cli.arguments import (
    add_cluster_arguments,
    add_files_argument,
    add_namespace_arguments,
    add_output_argument,
    add_runtime_lookup_argument,
    add_subcommand,
    no_headers,
)
from ome_selector.cli.output import JsonPathError, is_generic, object_name, render_generic
from ome_selector.cli.render import render_table
from ome_selector.cli.scope import object_source, views
from ome_selector.cli.sources import SourceError, load_catalog
from ome_selector.review.lint import Finding, Severity, has_errors, lint, lint_document
from ome_selector.selection.inheritance import RuntimeLookup

__all__ = ["LINT_OUTPUTS", "add_lint_parser", "lint_command", "render_findings"]

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_ERROR = 1
LINT_OUTPUTS = ("table", "json")
COLUMNS = ("CODE", "SEVERITY", "MESSAGE")

_USAGE = (
    "%(prog)s [-f PATH]... [-n NAMESPACE | -A] [-o table|json] [--strict]\n"
    "       [--runtime-lookup v1.3|legacy] [--kubeconfig PATH] [--context NAME] [-h]"
)

_DESCRIPTION = """\
Check a catalog of models and runtimes for the mistakes runtime selection keeps silent. Each finding has a
stable code, a severity, the objects involved and one line that says what to change:

  SIZE001  error    a size value that is not a parameter count, so it reads as 0 ("4b", "7 B")
  SIZE002  error    modelSizeRange.min above max: every model with a size is rejected
  OPER001  error    an unknown version operator: the entry matches no versioned model
  INHR002  error    a runtime whose ome.io/inherit-from chain is broken (the chain error)
  INHR003  error    ome.io/runtime-profile: "true" without spec.disabled: true (OME's webhook denies it)
  SIZE003  warning  two auto-selectable runtimes of one scope accept the same models in overlapping ranges
  RANK001  warning  for a model, the top two runtimes tie on score and size distance: the name decides
  RANK002  warning  a runtime without a range wins, as "closest", over a ranged runtime that covers the model
  RANK003  warning  a runtime with one size bound wins on distance over runtimes with both bounds
  DEAD001  warning  a runtime that is rank 1 for no model and that no InferenceService names or selects
  SERV001  warning  a model (with a format) that no runtime supports
  INHR001  warning  a runtime with a parent that auto-selection can pick on its own spec, ignoring the parent
  INHR004  warning  a runtime that sets no spec.disabled and inherits disabled: true
  MODE001  warning  an ome.io/deploymentMode value that is not a deployment mode, so it declares none

Rankings are those of explain and of the operator: auto-selection judges each runtime on its own spec, a
named runtime (found as --runtime-lookup says) on its effective spec, merged along ome.io/inherit-from.
Objects are read as explain reads them: with -f from files or directories only (never the kubeconfig; a
duplicate object is an error), else from the cluster of the kubeconfig context. Each namespace is judged
with its own ServingRuntimes and BaseModels and every cluster-scoped object: -n one namespace, -A all;
without either, the context's namespace, or with -f every namespace in the files."""

_EPILOG = """\
examples:
  # Check a catalog in CI, before it is applied
  kubectl ome-selector runtime lint -f catalog/

  # Fail on warnings too
  kubectl ome-selector runtime lint -f catalog/ --strict

  # The cluster, every namespace, as JSON
  kubectl ome-selector runtime lint -A -o json

exit status: 0 without errors, 1 when there is an error finding (with --strict: any finding) or a usage, file
or cluster error."""


def add_lint_parser(commands: argparse._SubParsersAction[Any]) -> None:
    """Register `lint` among the `runtime` subcommands."""
    parser = add_subcommand(
        commands,
        "lint",
        usage=_USAGE,
        summary="check a catalog for overlapping, tied, dead and malformed runtimes",
        description=_DESCRIPTION,
        epilog=_EPILOG,
    )
    add_files_argument(parser)
    add_namespace_arguments(parser, subject="judge the runtimes, models and InferenceServices")
    add_output_argument(parser, LINT_OUTPUTS)
    parser.add_argument("--strict", action="store_true", help="exit 1 on any finding, not only on errors")
    add_runtime_lookup_argument(parser)
    add_cluster_arguments(parser, when="live mode")
    parser.set_defaults(handler=lint_command)


def render_findings(findings: Sequence[Finding], output: str, *, headers: bool = True) -> str:
    """What lint prints on stdout: the table (empty without findings), the JSON document, or (``-o name``:
    each object a finding names, once, in finding order; ``-o jsonpath=…``) what kubectl makes of them."""
    if output == "json":
        return json.dumps(lint_document(findings), indent=2, ensure_ascii=False) + "\n"
    if is_generic(output):
        named = dict.fromkeys(object_name(key.kind.value, key.name) for f in findings for key in f.objects)
        return render_generic(output, lint_document(findings), named)
    if not findings:
        return ""
    rows = [(f.code.value, f.severity.value, f.message) for f in findings]
    return render_table(COLUMNS, rows, headers=headers)


def _summary(findings: Sequence[Finding], checked: str) -> str:
    errors = sum(1 for f in findings if f.severity is Severity.ERROR)
    warnings = len(findings) - errors
    return (
        f"{errors} error{'s' if errors != 1 else ''}, {warnings} warning{'s' if warnings != 1 else ''} "
        f"({checked})"
    )


def lint_command(args: argparse.Namespace) -> int:
    """Run `kubectl ome-selector runtime lint` for the parsed ``args``; returns the exit status."""
    try:
        source = object_source(args.filenames, args)
        catalog = load_catalog(source.read(), source.namespace)
        namespaces = views(catalog, source, args)
    except SourceError as error:
        sys.stderr.write(f"error: {error}\n")
        return EXIT_ERROR
    findings = lint(catalog, namespaces, RuntimeLookup(args.runtime_lookup))
    try:
        text = render_findings(findings, args.output, headers=not no_headers(args))
    except JsonPathError as error:
        sys.stderr.write(f"error: {error}\n")
        return EXIT_ERROR
    sys.stdout.write(text)
    sys.stdout.flush()
    if args.output == "table":
        checked = f"namespace{'s' if len(namespaces) != 1 else ''} {', '.join(namespaces)} and cluster scope"
        sys.stderr.write(_summary(findings, checked) + "\n")
    if has_errors(findings) or (args.strict and findings):
        return EXIT_FINDINGS
    return EXIT_OK
