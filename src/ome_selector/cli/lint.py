"""`kubectl ome-selector runtime lint`: the findings of SPEC §11 for a catalog, from files or the live
cluster.

The findings come from :func:`ome_selector.review.lint.lint` (and, from the bodies as read,
:func:`~ome_selector.review.lint.field_findings`); this module reads the objects, picks the namespaces
(:mod:`.scope`), switches findings off and summarises them (:mod:`ome_selector.review.report`), locates each
at ``file:line``, prints the table, JSON, SARIF or GitHub annotations and sets the exit status.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from ome_selector import __version__
from ome_selector.api.resources import ObjectKey
from ome_selector.cli.arguments import (
    add_cluster_arguments,
    add_files_argument,
    add_kustomize_argument,
    add_namespace_arguments,
    add_output_argument,
    add_runtime_lookup_argument,
    add_subcommand,
    no_headers,
)
from ome_selector.cli.output import JsonPathError, is_generic, object_name, render_generic
from ome_selector.cli.render import render_table
from ome_selector.cli.scope import object_source, views
from ome_selector.cli.sources import (
    RawObject,
    SourceError,
    objects_by_key,
    read_catalog,
    redefinition_warnings,
)
from ome_selector.review.lint import (
    RULES,
    Code,
    Finding,
    Severity,
    field_findings,
    has_errors,
    lint,
    severity_of,
)
from ome_selector.review.report import (
    LINT_DISABLE_ANNOTATION,
    Location,
    Summary,
    annotation_codes,
    github_annotations,
    json_document,
    parse_codes,
    sarif_log,
    summarise,
    suppress,
)
from ome_selector.selection.inheritance import RuntimeLookup

__all__ = ["LINT_OUTPUTS", "add_lint_parser", "lint_command", "render_findings"]

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_ERROR = 1
LINT_OUTPUTS = ("table", "json", "sarif", "github")
COLUMNS = ("CODE", "SEVERITY", "LOCATION", "MESSAGE")
#: The LOCATION of a summary, which stands for findings in many places.
NO_LOCATION = "-"

_USAGE = (
    "%(prog)s [-f PATH]... [-k DIR]... [-n NAMESPACE | -A] [-o table|json|sarif|github] [--strict]\n"
    "       [--disable CODE[,CODE]] [--show CODE[,CODE]] [--runtime-lookup v1.3|legacy]\n"
    "       [--kubeconfig PATH] [--context NAME] [-h]"
)

_DESCRIPTION = """\
Check a catalog of models and runtimes for the mistakes runtime selection keeps silent. Each finding has a
stable code, a severity, the objects involved, where it is (file:line) and one line that says what to change:

{rules}

Rankings are those of explain and of the operator: auto-selection judges each runtime on its own spec, a
named runtime (found as --runtime-lookup says) on its effective spec, merged along ome.io/inherit-from.
Objects are read as explain reads them: with -f from files or directories, with -k from what `kubectl
kustomize DIR` builds (never the kubeconfig; an object defined twice is read as kubectl apply leaves it, the
last one, with a warning), else from the cluster of the kubeconfig context. Each namespace is judged
with its own ServingRuntimes and BaseModels and every cluster-scoped object: -n one namespace, -A all;
without either, the context's namespace, or with -f every namespace in the files.

Each finding is located at the line of the field it is about, in the file of the object it is about;
objects read from the cluster have no file (LOCATION "(cluster)", a null location in JSON, no file in SARIF
and GitHub annotations). The DEAD001 findings are counted in one line unless --show DEAD001 lists them.
--disable switches codes off for the whole catalog; an object switches codes off for the findings it is part
of with the annotation {annotation}: "CODE[,CODE]"."""

_EPILOG = """\
examples:
  # Check a catalog in CI, before it is applied
  kubectl ome-selector runtime lint -f catalog/

  # Fail on warnings too
  kubectl ome-selector runtime lint -f catalog/ --strict

  # A kustomization, as kubectl apply -k would apply it
  kubectl ome-selector runtime lint -k overlays/prod/

  # The cluster, every namespace, as JSON
  kubectl ome-selector runtime lint -A -o json

  # For GitHub code scanning, and as annotations of a workflow run, without the overlap warnings
  kubectl ome-selector runtime lint -f catalog/ -o sarif > lint.sarif
  kubectl ome-selector runtime lint -f catalog/ -o github --disable SIZE003

  # Every runtime that is rank 1 for no model, one finding each
  kubectl ome-selector runtime lint -f catalog/ --show DEAD001

exit status: 0 without errors, 1 when there is an error finding (with --strict: any finding) or a usage, file
or cluster error."""


def add_lint_parser(commands: argparse._SubParsersAction[Any]) -> None:
    """Register `lint` among the `runtime` subcommands."""
    parser = add_subcommand(
        commands,
        "lint",
        usage=_USAGE,
        summary="check a catalog for overlapping, tied, dead and malformed runtimes",
        description=_DESCRIPTION.format(rules=_rules(), annotation=LINT_DISABLE_ANNOTATION),
        epilog=_EPILOG,
    )
    add_files_argument(parser)
    add_kustomize_argument(parser)
    add_namespace_arguments(parser, subject="judge the runtimes, models and InferenceServices")
    add_output_argument(parser, LINT_OUTPUTS)
    parser.add_argument("--strict", action="store_true", help="exit 1 on any finding, not only on errors")
    parser.add_argument(
        "--disable",
        action="append",
        type=_codes,
        default=[],
        metavar="CODE[,CODE]",
        help="report no finding of these codes (repeatable)",
    )
    parser.add_argument(
        "--show",
        action="append",
        type=_codes,
        default=[],
        metavar="CODE[,CODE]",
        help="list each finding of these codes instead of counting them in one line (DEAD001)",
    )
    add_runtime_lookup_argument(parser)
    add_cluster_arguments(parser, when="live mode")
    parser.set_defaults(handler=lint_command)


def _rules() -> str:
    """The help's table of codes: errors first, as :data:`~ome_selector.review.lint.RULES` orders them."""
    return "\n".join(f"  {code.value}  {severity_of(code).value:<7}  {text}" for code, text in RULES.items())


def _codes(text: str) -> frozenset[Code]:
    """An argument of --disable or --show: codes separated by commas."""
    codes, unknown = parse_codes(text)
    if unknown:
        raise argparse.ArgumentTypeError(
            f'unknown code "{unknown[0]}" (the codes: {", ".join(sorted(code.value for code in Code))})'
        )
    return codes


class _Locator:
    """Where findings are: the file and line of the subject's field, or no file for a live object."""

    def __init__(self, objects: Mapping[ObjectKey, RawObject]) -> None:
        self.objects = objects

    def at(self, key: ObjectKey, field: Sequence[str | int] = ()) -> Location | None:
        raw = self.objects.get(key)
        if raw is None:
            return None
        if not raw.from_file:
            return Location(None)
        line = raw.positions.line_of(field) if raw.positions is not None else None
        return Location(raw.origin, line)

    def __call__(self, finding: Finding) -> Location | None:
        return self.at(finding.subject, finding.field) if finding.subject is not None else None


def render_findings(
    findings: Sequence[Finding],
    summaries: Sequence[Summary],
    output: str,
    locator: _Locator,
    *,
    headers: bool = True,
) -> str:
    """What lint prints on stdout: the table (empty without findings), the JSON document, the SARIF log, the
    GitHub workflow annotations, or (``-o name``: each object a finding names, once, in finding order;
    ``-o jsonpath=…``) what kubectl makes of the JSON document."""
    if output == "json":
        return json.dumps(json_document(findings, summaries, locator), indent=2, ensure_ascii=False) + "\n"
    if output == "sarif":
        log = sarif_log(findings, summaries, locator, locator.at, version=__version__)
        return json.dumps(log, indent=2, ensure_ascii=False) + "\n"
    if output == "github":
        return "".join(line + "\n" for line in github_annotations(findings, summaries, locator))
    if is_generic(output):
        named = dict.fromkeys(object_name(key.kind.value, key.name) for f in findings for key in f.objects)
        return render_generic(output, json_document(findings, summaries, locator), named)
    if not findings and not summaries:
        return ""
    rows = [(f.code.value, f.severity.value, _location_text(locator(f)), f.message) for f in findings] + [
        (s.code.value, s.severity.value, NO_LOCATION, s.message) for s in summaries
    ]
    return render_table(COLUMNS, rows, headers=headers)


def _location_text(location: Location | None) -> str:
    return location.text if location is not None else NO_LOCATION


def _summary(findings: Sequence[Finding], checked: str) -> str:
    errors = sum(1 for f in findings if f.severity is Severity.ERROR)
    warnings = len(findings) - errors
    return (
        f"{errors} error{'s' if errors != 1 else ''}, {warnings} warning{'s' if warnings != 1 else ''} "
        f"({checked})"
    )


def _annotations(
    objects: Mapping[ObjectKey, RawObject], locator: _Locator
) -> tuple[dict[ObjectKey, frozenset[Code]], list[str]]:
    """The codes each object switches off, and a warning for each word of an annotation that is no code."""
    disabled: dict[ObjectKey, frozenset[Code]] = {}
    warnings: list[str] = []
    for key, raw in objects.items():
        codes, unknown = annotation_codes(raw.body)
        if codes:
            disabled[key] = codes
        location = locator.at(key, ("metadata", "annotations", LINT_DISABLE_ANNOTATION))
        warnings.extend(
            f'warning: {_location_text(location)}: {key}: {LINT_DISABLE_ANNOTATION}: "{word}" is not a lint '
            "code"
            for word in unknown
        )
    return disabled, warnings


def lint_command(args: argparse.Namespace) -> int:
    """Run `kubectl ome-selector runtime lint` for the parsed ``args``; returns the exit status."""
    try:
        source = object_source(args.filenames, args)
        raws = source.read()
        catalog, redefined = read_catalog(raws, source.namespace)
        namespaces = views(catalog, source, args)
    except SourceError as error:
        sys.stderr.write(f"error: {error}\n")
        return EXIT_ERROR
    scope = set(namespaces)
    objects = {
        key: raw
        for key, raw in objects_by_key(raws, source.namespace).items()
        if key.namespace is None or key.namespace in scope
    }
    locator = _Locator(objects)
    found = list(lint(catalog, namespaces, RuntimeLookup(args.runtime_lookup)))
    for key, raw in objects.items():
        found.extend(field_findings(key, raw.body))
    per_object, warnings = _annotations(objects, locator)
    disabled = frozenset().union(*args.disable)
    reported = sorted(suppress(found, disabled, per_object), key=lambda finding: finding.order)
    listed, summaries = summarise(reported, frozenset().union(*args.show))
    for warning in [*redefinition_warnings(redefined), *warnings]:
        sys.stderr.write(warning + "\n")
    try:
        text = render_findings(listed, summaries, args.output, locator, headers=not no_headers(args))
    except JsonPathError as error:
        sys.stderr.write(f"error: {error}\n")
        return EXIT_ERROR
    sys.stdout.write(text)
    sys.stdout.flush()
    if args.output == "table":
        checked = f"namespace{'s' if len(namespaces) != 1 else ''} {', '.join(namespaces)} and cluster scope"
        sys.stderr.write(_summary(reported, checked) + "\n")
    if has_errors(reported) or (args.strict and reported):
        return EXIT_FINDINGS
    return EXIT_OK
