"""The arguments of `kubectl ome-selector model inspect --against` (SPEC §10), apart from the inspection's
own: the command line is parsed without loading the catalog readers."""

from __future__ import annotations

import argparse

from ome_selector.cli.arguments import RUNTIME_LOOKUPS

__all__ = ["add_against_arguments", "against_complaint"]


def add_against_arguments(parser: argparse.ArgumentParser) -> None:
    """``--against``, ``--model`` and ``--runtime-lookup`` of `model inspect`."""
    group = parser.add_argument_group("the verdicts once learned")
    group.add_argument(
        "--against",
        metavar="CATALOG_DIR|cluster",
        help="show every runtime's verdict for the model today and once the learned fields are written: "
        "against the manifests of a file or directory, or 'cluster' for the live cluster (a directory named "
        "cluster is ./cluster)",
    )
    group.add_argument(
        "--model",
        metavar="NAME",
        help="with --against: the BaseModel (of -n) or ClusterBaseModel the files are of (default: those "
        "whose spec.storage.storageUri is SOURCE)",
    )
    group.add_argument(
        "--runtime-lookup",
        choices=RUNTIME_LOOKUPS,
        default=RUNTIME_LOOKUPS[0],
        metavar="v1.3|legacy",
        help="with --against: how spec.runtime.name is looked up (SPEC §1; default v1.3)",
    )


def against_complaint(args: argparse.Namespace) -> str | None:
    """``""`` when --against allows the cluster options given; the complaint about a misuse of --against's
    options; None when --against is not given (the options are judged as --apply's)."""
    if args.against is None:
        if args.model is not None:
            return "--model is only used with --against"
        return None
    if args.apply is not None:
        return "--against and --apply are not used together"
    if args.against != "cluster" and (args.kubeconfig is not None or args.context is not None):
        return "--kubeconfig and --context are only used with --against cluster (or --apply)"
    return ""
