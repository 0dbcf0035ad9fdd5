"""The command-line arguments the `kubectl ome-selector` subcommands share, each written once: the subcommand
itself, ``-f``, ``-k``, ``-o`` (with ``--no-headers``), ``-n``/``-A``, ``--runtime-lookup`` and the cluster's
(``--kubeconfig``, ``--context``, ``--request-timeout``)."""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ome_selector.api.resources import Kind
from ome_selector.cli.output import JSONPATH_PREFIX, NAME, OutputChoices, output_type
from ome_selector.cli.sources import Kustomization

__all__ = [
    "add_cluster_arguments",
    "add_files_argument",
    "add_kustomize_argument",
    "add_namespace_arguments",
    "add_output_argument",
    "add_runtime_lookup_argument",
    "add_subcommand",
    "kind_names",
    "no_headers",
    "request_timeout",
]

#: kubectl's short names of the five kinds, for every KIND/NAME argument (``--delete``, ``--apply``) and
#: ``--kind``. The CRDs declare only ``isvc`` (SPEC §6): these are the plugin's own, and ``kubectl get csr``
#: still means CertificateSigningRequests.
SHORT_KINDS = {
    "csr": Kind.CLUSTER_SERVING_RUNTIME,
    "sr": Kind.SERVING_RUNTIME,
    "cbm": Kind.CLUSTER_BASE_MODEL,
    "bm": Kind.BASE_MODEL,
    "isvc": Kind.INFERENCE_SERVICE,
}


def kind_names(kinds: Sequence[Kind]) -> dict[str, Kind]:
    """How a KIND of ``kinds`` may be written (matched lowercased): singular, plural or short name."""
    names = {kind.value.lower(): kind for kind in kinds} | {kind.plural: kind for kind in kinds}
    return names | {short: kind for short, kind in SHORT_KINDS.items() if kind in kinds}


#: The values of ``--runtime-lookup`` (SPEC §1), the default first.
RUNTIME_LOOKUPS = ("v1.3", "legacy")

#: What ``-f`` reads when a subcommand says nothing else.
FILES_HELP = "read objects from this file or directory (recursively), not the cluster; repeatable; - = stdin"


def add_subcommand(
    commands: argparse._SubParsersAction[Any],
    name: str,
    *,
    usage: str,
    summary: str,
    description: str,
    epilog: str,
) -> argparse.ArgumentParser:
    """A subcommand whose description and epilog (examples) are printed as written."""
    parser: argparse.ArgumentParser = commands.add_parser(
        name,
        usage=usage,
        help=summary,
        description=description,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return parser


def add_files_argument(
    parser: argparse.ArgumentParser, *, dest: str = "filenames", metavar: str = "PATH", help: str = FILES_HELP
) -> None:
    """``-f``/``--filename``, repeatable, into the list ``dest``."""
    parser.add_argument(
        "-f", "--filename", action="append", dest=dest, metavar=metavar, default=[], help=help
    )


#: What ``-k`` reads when a subcommand says nothing else.
KUSTOMIZE_HELP = (
    "read the objects `kubectl kustomize DIR` builds (kubectl on PATH), not the cluster; repeatable, read in "
    "command-line order with -f"
)


def _kustomization(text: str) -> Kustomization:
    if not text:
        raise argparse.ArgumentTypeError("must not be empty")
    return Kustomization(text)


def add_kustomize_argument(
    parser: argparse.ArgumentParser, *, dest: str = "filenames", help: str = KUSTOMIZE_HELP
) -> None:
    """``-k``/``--kustomize DIR``, repeatable, into the same list ``dest`` as ``-f`` so that the two keep
    their command-line order (SPEC §6: of two definitions of one object the later one is kept)."""
    parser.add_argument(
        "-k",
        "--kustomize",
        action="append",
        dest=dest,
        metavar="DIR",
        type=_kustomization,
        default=[],
        help=help,
    )


def add_output_argument(parser: argparse.ArgumentParser, formats: Sequence[str]) -> None:
    """``-o``/``--output``, one of ``formats`` (the first is the default), ``name`` or ``jsonpath=TEMPLATE``
    (:mod:`.output`, SPEC §6); with a table among them also ``--no-headers``."""
    parser.add_argument(
        "-o",
        "--output",
        choices=OutputChoices((*formats, NAME)),
        type=output_type(formats),
        default=formats[0],
        metavar="FORMAT",
        help=(
            f"output format: {', '.join(formats)}, {NAME} or {JSONPATH_PREFIX}TEMPLATE (default {formats[0]})"
        ),
    )
    if "table" in formats:
        parser.add_argument(
            "--no-headers", action="store_true", help="tables without their header line, as kubectl's"
        )


def no_headers(args: argparse.Namespace) -> bool:
    """Whether ``--no-headers`` was given (False for a command without it)."""
    return bool(getattr(args, "no_headers", False))


def add_namespace_arguments(parser: argparse.ArgumentParser, *, subject: str) -> None:
    """``-n NAMESPACE`` and ``-A``, which exclude each other."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "-n",
        "--namespace",
        metavar="NAMESPACE",
        help=f"{subject} of this namespace only (with files also the namespace of objects that name none)",
    )
    group.add_argument(
        "-A",
        "--all-namespaces",
        action="store_true",
        help=f"{subject} of every namespace (with files the default)",
    )


def add_cluster_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup, *, when: str) -> None:
    """``--kubeconfig``, ``--context`` and ``--request-timeout``, used ``when`` (e.g. "live mode")."""
    parser.add_argument(
        "--kubeconfig", metavar="PATH", type=Path, help=f"kubeconfig file ({when}; default as kubectl)"
    )
    parser.add_argument("--context", metavar="NAME", help=f"kubeconfig context ({when})")
    parser.add_argument(
        "--request-timeout",
        metavar="DURATION",
        type=request_timeout,
        default=None,
        help=f"bound of each request to the cluster ({when}), as kubectl's: 5, 5s, 2m, 1h30m; 0 = none",
    )


#: One term of a Go duration (time.ParseDuration), as kubectl's --request-timeout reads it.
_DURATION_TERM = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
#: kubectl's (client-go's) message for a value it cannot read.
REQUEST_TIMEOUT_ERROR = (
    "Invalid timeout value. Timeout must be a single integer in seconds, or an integer followed by a "
    "corresponding time unit (e.g. 1s | 2m | 3h)"
)


def request_timeout(text: str) -> float | None:
    """``--request-timeout`` in seconds, None for none (``0``): a whole number of seconds, or a Go duration
    (``1m30s``, ``500ms``), as client-go reads it."""
    if text.isascii() and text.isdigit():
        seconds = float(int(text))
    else:
        terms = _DURATION_TERM.findall(text)
        if not terms or "".join(number + unit for number, unit in terms) != text:
            raise argparse.ArgumentTypeError(REQUEST_TIMEOUT_ERROR)
        seconds = sum(float(number) * _UNIT_SECONDS[unit] for number, unit in terms)
    return seconds if seconds > 0 else None


def add_runtime_lookup_argument(parser: argparse.ArgumentParser) -> None:
    """``--runtime-lookup v1.3|legacy`` (SPEC §1): how a named runtime is found, into ``runtime_lookup``."""
    parser.add_argument(
        "--runtime-lookup",
        choices=RUNTIME_LOOKUPS,
        default=RUNTIME_LOOKUPS[0],
        metavar="v1.3|legacy",
        help=(
            "how spec.runtime.name is looked up: v1.3 by spec.runtime.kind, as OME v1.3 does; legacy the "
            "ServingRuntime of the namespace, else the ClusterServingRuntime (OME v1.2.2 and older); "
            "default v1.3"
        ),
    )
