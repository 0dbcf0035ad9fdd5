"""The command-line arguments the `kubectl ome` subcommands share, each written once: the subcommand itself,
``-f``, ``-k``, ``-o``, ``-n``/``-A``, ``--runtime-lookup`` and the kubeconfig pair."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ome_selector.cli.sources import Kustomization

__all__ = [
    "add_cluster_arguments",
    "add_files_argument",
    "add_kustomize_argument",
    "add_namespace_arguments",
    "add_output_argument",
    "add_runtime_lookup_argument",
    "add_subcommand",
]

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
    """``-o``/``--output``, one of ``formats`` (the first is the default)."""
    parser.add_argument(
        "-o",
        "--output",
        choices=formats,
        default=formats[0],
        metavar="FORMAT",
        help=f"output format: {', '.join(formats[:-1])} or {formats[-1]} (default {formats[0]})",
    )


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
    """``--kubeconfig`` and ``--context``, used ``when`` (e.g. "live mode")."""
    parser.add_argument(
        "--kubeconfig", metavar="PATH", type=Path, help=f"kubeconfig file ({when}; default as kubectl)"
    )
    parser.add_argument("--context", metavar="NAME", help=f"kubeconfig context ({when})")


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
