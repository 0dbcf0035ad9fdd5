"""`kubectl ome-selector`: the kubectl plugin of ome-selector, the ``kubectl-ome_selector`` executable (not
``kubectl-ome``, OME's own plugin: SPEC §6).

``kubectl ome-selector runtime explain`` shows, for one model or InferenceService, every runtime's verdict,
the ranking and the runtime auto-selection picks (SPEC §6). With ``-f`` it reads only the named files, never
the kubeconfig, so a catalog can be checked in CI before it is applied; `lint` and `what-if` (SPEC §11, in
:mod:`.lint` and :mod:`.whatif`) check a whole catalog and a change to it; `status` (:mod:`.status`) lists
every InferenceService's runtime and RuntimeReady, on OME's CRDs too. The decisions all come from the
selection core; this module only wires an object source to it and prints the result.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from ome_selector import __version__
from ome_selector.api.resources import InferenceService, Kind, Model, ObjectKey
from ome_selector.catalog.catalog import Catalog
from ome_selector.cli.arguments import (
    add_cluster_arguments,
    add_files_argument,
    add_kustomize_argument,
    add_output_argument,
    add_runtime_lookup_argument,
    add_subcommand,
    no_headers,
)
from ome_selector.cli.completion import COMPLETE, add_completion_command, handled
from ome_selector.cli.exits import quietly
from ome_selector.cli.lint import add_lint_parser
from ome_selector.cli.model_inspect import add_model_command, run_model_command
from ome_selector.cli.output import JsonPathError
from ome_selector.cli.render import OUTPUT_FORMATS, render
from ome_selector.cli.sources import (
    DEFAULT_NAMESPACE,
    FileSource,
    ObjectSource,
    SourceError,
    read_catalog,
    redefinition_warnings,
)
from ome_selector.cli.status import add_status_parser
from ome_selector.cli.whatif import add_what_if_parser
from ome_selector.selection import messages
from ome_selector.selection.explain import EffectiveRuntime, Explanation, effective_runtime, explain
from ome_selector.selection.inheritance import RuntimeLookup
from ome_selector.selection.outcome import evaluate
from ome_selector.selection.ranking import Decider

__all__ = ["main", "run"]

PROG = "kubectl ome-selector"
#: The executable kubectl runs for `kubectl ome-selector` (SPEC §6).
PROG_EXECUTABLE = "kubectl-ome_selector"
EXIT_OK = 0
EXIT_ERROR = 1

#: The usage error of `--with-effective` without `--isvc` (SPEC §6).
WITH_EFFECTIVE_REQUIRES_ISVC = "--with-effective requires --isvc"
#: OME's own line when the InferenceService names a runtime (SPEC §6).
EXPLICIT_RUNTIME_NOTE = "Note: spec.runtime is explicit; automatic selection below is hypothetical."

#: The synopsis of SPEC §6 (argparse cannot say that -f repeats).
EXPLAIN_USAGE = (
    "%(prog)s (--model NAME | --isvc NAME) [-n NAMESPACE] [-f PATH]... [-k DIR]...\n"
    "       [-o table|wide|json|yaml] [--with-effective] [--runtime-lookup v1.3|legacy] [--kubeconfig PATH]\n"
    "       [--context NAME] [-h] [-o name|jsonpath=TEMPLATE] [--no-headers] [--request-timeout DURATION]"
)

_EXPLAIN_DESCRIPTION = """\
Show how runtime selection judges every serving runtime for a model: whether it supports the model, whether it
can be auto-selected, its priority, score and rank, and the reason when it cannot. Runtimes considered are the
ServingRuntimes of the namespace and all ClusterServingRuntimes.

With --isvc the model is the InferenceService's spec.model.name and the accelerator classes and deployment
modes it asks for take part. The table always shows auto-selection, each runtime judged on its own spec (not
what it inherits through ome.io/inherit-from), also when the InferenceService names a runtime (a note on
stderr says so). -o wide adds WEIGHT (OME's explain column), SUPPORTS, RANK and RANGE.

--with-effective (with --isvc) adds what the InferenceService would run: the named runtime (Explicit) or the
one auto-selection picks (Selected), and the inheritance chain its effective spec is merged from, root first.

Without -f it reads the cluster of the current kubeconfig context (or --kubeconfig/--context) through one
consistent, paged listing; the namespace is -n, else the context's, else "default".

With -f (files or directories, repeatable) only those objects are read, never the cluster or the kubeconfig.
Directories are read recursively (*.yaml, *.yml, *.json); "kind: List" is expanded; other kinds are skipped;
a namespaced object without metadata.namespace is in the -n namespace; inheritance chains are resolved from
those objects alone. With -k DIR (repeatable) the objects are those `kubectl kustomize DIR` builds, with the
kubectl on PATH. An object defined more than once (in -f and -k order) is read as kubectl apply leaves it: the
last definition is used, with a warning naming where each one is."""

_EXPLAIN_EPILOG = """\
examples:
  # Why did the cluster choose this runtime?
  kubectl ome-selector runtime explain --isvc llama-3b-auto -n ome-demo

  # Check a catalog before applying it
  kubectl ome-selector runtime explain -f samples/ --model llama-3-2-3b-instruct-demo

  # The same for an InferenceService, with the rank and range columns
  kubectl ome-selector runtime explain -f samples/ --isvc llama-3b-auto -n ome-demo -o wide

  # What a named runtime inherits, and from where
  kubectl ome-selector runtime explain -f samples/ --isvc demo-inherited -n demo-v13 --with-effective

  # The machine-readable document, or one field of it as kubectl's jsonpath reads it
  kubectl ome-selector runtime explain -f catalog/ -f models.yaml --model qwen3-8b -o json
  kubectl ome-selector runtime explain --isvc llama-3b-auto -n ome-demo -o jsonpath='{.selected.decidedBy}'

  # A kustomization, as kubectl apply -k would apply it
  kubectl ome-selector runtime explain -k overlays/prod/ --model qwen3-8b

exit status: 0 when it could explain (also when there are no runtimes), 1 on a usage, file or lookup error."""


#: The deciders after which explain names the step on stderr (SPEC §6).
_TIE_BREAKS = frozenset({Decider.SCOPE, Decider.SIZE_RANGE, Decider.NAME})


class CommandError(Exception):
    """A failed lookup (model or InferenceService not found, ...); ``str()`` is the message for stderr, and
    ``warnings`` what stderr says before it (objects defined more than once, SPEC §6)."""

    def __init__(self, message: str, warnings: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.warnings = tuple(warnings)


class _Parser(argparse.ArgumentParser):
    """argparse with kubectl's exit status for usage errors: 1, not argparse's 2."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_ERROR, f"error: {message}\n")


def _name(text: str) -> str:
    """An object name; an empty one is a usage error rather than a lookup that cannot succeed."""
    if not text:
        raise argparse.ArgumentTypeError("must not be empty")
    return text


def build_parser() -> argparse.ArgumentParser:
    """The whole `kubectl ome-selector` command line."""
    parser = _Parser(prog=PROG, description="Inspect OME runtime selection (ome-selector).")
    parser.add_argument("--version", action="version", version=f"{PROG} (ome-selector) {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=_Parser)

    runtime = commands.add_parser(
        "runtime", help="inspect serving runtimes", description="Inspect serving runtimes."
    )
    runtime_commands = runtime.add_subparsers(
        dest="runtime_command", metavar="COMMAND", required=True, parser_class=_Parser
    )
    explain_parser = add_subcommand(
        runtime_commands,
        "explain",
        usage=EXPLAIN_USAGE,
        summary="show why each runtime is or is not selected for a model",
        description=_EXPLAIN_DESCRIPTION,
        epilog=_EXPLAIN_EPILOG,
    )
    subject = explain_parser.add_mutually_exclusive_group(required=True)
    subject.add_argument(
        "--model", metavar="NAME", type=_name, help="the BaseModel (else ClusterBaseModel) to explain"
    )
    subject.add_argument(
        "--isvc", metavar="NAME", type=_name, help="the InferenceService whose model to explain"
    )
    explain_parser.add_argument(
        "-n",
        "--namespace",
        metavar="NAMESPACE",
        help="namespace of the model, InferenceService and ServingRuntimes (with -f: default 'default')",
    )
    add_files_argument(explain_parser)
    add_kustomize_argument(explain_parser)
    add_output_argument(explain_parser, OUTPUT_FORMATS)
    explain_parser.add_argument(
        "--with-effective",
        action="store_true",
        help="with --isvc: also show the runtime it would run and the inheritance chain of its spec",
    )
    add_runtime_lookup_argument(explain_parser)
    add_cluster_arguments(explain_parser, when="without -f")
    # SPEC §6: a usage error (exit 1), checked once the arguments are parsed.
    explain_parser.set_defaults(usage_error=explain_parser.error)
    add_lint_parser(runtime_commands)
    add_what_if_parser(runtime_commands)
    add_model_command(commands, _Parser)
    add_status_parser(commands)
    add_completion_command(commands)
    commands.add_parser(
        "version",
        help="print the version; say when another kubectl-ome (OME's plugin) is on PATH",
        description="Print the plugin's version. When PATH holds a kubectl-ome that is not this plugin "
        "(OME's own), say that `kubectl ome` runs that one.",
    )
    return parser


#: OME's own plugin's executable name, which this plugin's alias would take (SPEC §6).
OME_PLUGIN = "kubectl-ome"
#: The first bytes of an executable read to tell whether it is this plugin (a console script names its
# module).
_PROBE_BYTES = 64 * 1024
_OWN_MODULE = b"ome_selector.cli.kubectl_ome"


def _is_this_plugin(path: Path, own: set[Path]) -> bool:
    """Whether ``path`` is this plugin: a link to (or the same file as) one of ``own``, or a console script
    of this module."""
    if path.resolve() in own:
        return True
    try:
        with path.open("rb") as file:
            return _OWN_MODULE in file.read(_PROBE_BYTES)
    except OSError:
        return False


def other_kubectl_ome(search_path: str | None = None, argv0: str | None = None) -> list[Path]:
    """Every ``kubectl-ome`` executable on ``search_path`` (default ``$PATH``) that is not this plugin, in
    PATH order, each once."""
    directories = (os.environ.get("PATH", "") if search_path is None else search_path).split(os.pathsep)
    own = {
        Path(found).resolve() for d in directories if d and (found := _executable(Path(d) / PROG_EXECUTABLE))
    }
    if argv0:
        own.add(Path(argv0).resolve())
    others: list[Path] = []
    seen: set[Path] = set()
    for directory in directories:
        candidate = _executable(Path(directory) / OME_PLUGIN) if directory else None
        if candidate is None or candidate.resolve() in seen:
            continue
        seen.add(candidate.resolve())
        if not _is_this_plugin(candidate, own):
            others.append(candidate)
    return others


def _executable(path: Path) -> Path | None:
    return path if path.is_file() and os.access(path, os.X_OK) else None


def version_lines(others: list[Path]) -> tuple[str, list[str]]:
    """``version``'s stdout line and its notes for stderr (SPEC §6)."""
    notes = [
        f"Note: another kubectl-ome is on PATH ({other}): `kubectl ome` may run it rather than this plugin; "
        "run this one as `kubectl ome-selector`"
        for other in others
    ]
    return f"{PROG} (ome-selector) {__version__}\n", notes


def object_source(args: argparse.Namespace) -> ObjectSource:
    """Where the objects come from: the `-f` files and `-k` kustomizations (never the kubeconfig), else the
    current cluster."""
    if args.filenames:
        return FileSource(tuple(args.filenames), args.namespace or DEFAULT_NAMESPACE)
    from ome_selector.cli.cluster_source import ClusterSource  # noqa: PLC0415 - only live mode loads the client

    return ClusterSource(args.namespace, args.kubeconfig, args.context, request_timeout=args.request_timeout)


def _find_isvc(catalog: Catalog, namespace: str, name: str) -> InferenceService:
    resource = catalog.get(ObjectKey(Kind.INFERENCE_SERVICE, namespace, name))
    if not isinstance(resource, InferenceService):
        raise CommandError(f"InferenceService {name} not found in namespace {namespace}")
    return resource


def _notes(catalog: Catalog, model: Model, isvc: InferenceService | None, lookup: RuntimeLookup) -> list[str]:
    """What explain says on stderr besides the table: a named runtime (OME's note, then the operator's
    verdict), a disabled or pending model."""
    notes: list[str] = []
    if isvc is not None and isvc.runtime_name is not None:
        notes.append(EXPLICIT_RUNTIME_NOTE)
        outcome = evaluate(catalog, isvc, lookup)
        verdict = f": {outcome.reason}: {outcome.message}" if outcome is not None else ""
        notes.append(
            f"Note: InferenceService {isvc.namespace}/{isvc.name} names runtime {isvc.runtime_name}{verdict}"
        )
    if model.spec.disabled:
        notes.append(
            f"Warning: {messages.model_disabled(model.name)}; its InferenceServices report ModelDisabled"
        )
    elif not model.spec.has_format:
        notes.append(f"Warning: {messages.model_pending(model.name)}")
    return notes


def _subject(
    args: argparse.Namespace, catalog: Catalog, namespace: str
) -> tuple[InferenceService | None, Model]:
    """The InferenceService (with ``--isvc``) and the model to explain; :class:`CommandError` if not found."""
    isvc: InferenceService | None = None
    if args.isvc is not None:
        isvc = _find_isvc(catalog, namespace, args.isvc)
        model_name = isvc.model_name
        if model_name is None:
            raise CommandError(
                f"InferenceService {namespace}/{isvc.name} has no spec.model; runtime selection ignores it"
            )
    else:
        model_name = args.model
    model = catalog.resolve_model(namespace, model_name)
    if model is None:
        raise CommandError(messages.model_not_found(model_name, namespace))
    return isvc, model


def explain_command(
    args: argparse.Namespace, source: ObjectSource
) -> tuple[Explanation, EffectiveRuntime | None, list[str]]:
    """The explanation for the parsed command line, the effective runtime (with ``--with-effective``) and the
    notes for stderr.

    Raises :class:`SourceError` when the objects cannot be read and :class:`CommandError` when a lookup fails.
    """
    lookup = RuntimeLookup(args.runtime_lookup)
    namespace = source.namespace
    catalog, redefined = read_catalog(source.read(), namespace)
    warnings = redefinition_warnings(redefined)
    try:
        isvc, model = _subject(args, catalog, namespace)
    except CommandError as error:
        raise CommandError(str(error), warnings) from None
    explanation = explain(catalog, model, namespace, isvc)
    effective = None
    if args.with_effective and isvc is not None:
        effective = effective_runtime(catalog, explanation, isvc, lookup)
    notes = _notes(catalog, model, isvc, lookup)
    names_none = isvc is None or isvc.runtime_name is None
    if explanation.decided_by in _TIE_BREAKS and args.output in ("table", "wide") and names_none:
        # SPEC §6: when a step after the score decided, the condition's text says which (SPEC §5); the
        # documents carry it as selected.decidedBy and selected.message.
        notes.append(f"Note: {explanation.selected_message}")
    if not explanation.verdicts:
        notes.append(f"No serving runtimes found in namespace {namespace} or at cluster scope.")
    return explanation, effective, [*notes, *warnings]


def _live_names(dest: str, words: Sequence[str], partial: str) -> list[str] | None:
    """Object names from the cluster for `--model`, `--isvc` and `-n` (only completion loads the client)."""
    from ome_selector.cli.live_completion import live_names  # noqa: PLC0415

    return live_names(dest, words, partial)


def run(argv: Sequence[str] | None = None) -> int:
    """Run `kubectl ome-selector` with ``argv`` (default: the process arguments); returns the exit status."""
    if handled(PROG_EXECUTABLE, build_parser, list(sys.argv[1:] if argv is None else argv), _live_names):
        return EXIT_OK
    try:
        args = build_parser().parse_args(argv)
        if getattr(args, "with_effective", False) and args.isvc is None:
            args.usage_error(WITH_EFFECTIVE_REQUIRES_ISVC)
    except SystemExit as exit_:  # --help, --version and usage errors
        return exit_.code if isinstance(exit_.code, int) else EXIT_ERROR
    if args.command == "model":
        return run_model_command(args)
    if args.command == "version":
        line, version_notes = version_lines(other_kubectl_ome(argv0=sys.argv[0]))
        sys.stdout.write(line)
        for note in version_notes:
            sys.stderr.write(note + "\n")
        return EXIT_OK
    handler = getattr(args, "handler", None)
    if handler is not None:  # lint, what-if and status
        status: int = handler(args)
        return status
    try:
        explanation, effective, notes = explain_command(args, object_source(args))
    except (SourceError, CommandError) as error:
        for warning in error.warnings if isinstance(error, CommandError) else ():
            sys.stderr.write(warning + "\n")
        sys.stderr.write(f"error: {error}\n")
        return EXIT_ERROR
    try:
        text = render(explanation, args.output, effective, headers=not no_headers(args))
    except JsonPathError as error:
        sys.stderr.write(f"error: {error}\n")
        return EXIT_ERROR
    for note in notes:
        sys.stderr.write(note + "\n")
    sys.stdout.write(text)
    sys.stdout.flush()
    return EXIT_OK


def main() -> int:
    """Console-script entry point (``kubectl-ome_selector``)."""
    return quietly(run, on_broken_pipe=EXIT_OK)


def complete_main() -> int:
    """Console-script entry point ``kubectl_complete-ome_selector``: kubectl 1.26 and later run it with the
    words after ``kubectl ome-selector`` (the last one being typed) to complete them."""
    return quietly(lambda: run([COMPLETE, *sys.argv[1:]]), on_broken_pipe=EXIT_OK)


if __name__ == "__main__":
    sys.exit(main())
