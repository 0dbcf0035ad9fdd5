"""`ome-selector`: run the operator, drain it before it stops, or remove its condition before uninstalling."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ome_selector import __version__
from ome_selector.cli.completion import add_completion_command, handled
from ome_selector.cli.exits import quietly

if TYPE_CHECKING:
    from ome_selector.operator.app import LeaderElectionConfig
from ome_selector.selection.inheritance import RuntimeLookup
from ome_selector.webhook.cli import add_webhook_arguments, webhook_config_from_args


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host or "0.0.0.0", int(port)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ome-selector", description=__doc__)
    parser.add_argument("--version", action="version", version=f"ome-selector {__version__}")
    parser.add_argument(
        "--kubeconfig", type=Path, help="kubeconfig file (default: in-cluster, $KUBECONFIG, ~/.kube/config)"
    )
    parser.add_argument("--context", help="kubeconfig context")
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser(
        "run", help="watch models, runtimes and InferenceServices and report RuntimeReady"
    )
    scope = run.add_mutually_exclusive_group()
    scope.add_argument(
        "-n",
        "--namespace",
        action="append",
        dest="namespaces",
        metavar="NAMESPACE",
        help="watch only this namespace (repeatable); cluster kinds are always watched",
    )
    scope.add_argument("-A", "--all-namespaces", action="store_true", help="watch all namespaces (default)")
    run.add_argument(
        "--report-only",
        action="store_true",
        help="evaluate and export metrics, but write no conditions and record no events",
    )
    run.add_argument(
        "--runtime-lookup",
        choices=[lookup.value for lookup in RuntimeLookup],
        default=RuntimeLookup.V1_3.value,
        help="how spec.runtime.name finds its runtime: by spec.runtime.kind as OME v1.3 does (default), or "
        "legacy, as OME v1.2.2 and older (the ServingRuntime, else the ClusterServingRuntime)",
    )
    run.add_argument("--workers", type=int, default=4, help="concurrent evaluations (default 4)")
    run.add_argument(
        "--resync-seconds", type=float, default=600.0, help="full re-listing period (default 600)"
    )
    run.add_argument(
        "--health-bind-address",
        type=_address,
        default=("0.0.0.0", 8080),
        help="HOST:PORT for /healthz and /metrics (default :8080)",
    )
    run.add_argument("--log-format", choices=["json", "plain"], default="json")
    run.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default="info",
        help="the least severe lines logged (default info); debug also shows Kopf's own per-object lines",
    )
    run.add_argument("-v", "--verbose", action="store_true", help="the same as --log-level debug")
    add_webhook_arguments(run)  # --webhook-* and --strict-sizes (ome_selector.webhook.cli)
    _add_leader_election_arguments(run)
    run.add_argument(
        "--learn-model-metadata",
        nargs="?",
        const="write",
        choices=("write", "report"),
        metavar="write|report",
        help="fill in the size, format, architecture, framework, quantization and maxTokens that hf:// "
        "BaseModels and ClusterBaseModels lack, from their files on the Hub (HF_ENDPOINT, HF_TOKEN; "
        "not in --report-only); =report only warns of the InferenceServices the learned values would "
        "leave without a runtime, and writes nothing",
    )
    run.add_argument(
        "--token-namespace",
        action="append",
        default=[],
        metavar="NS",
        help="with --learn-model-metadata: BaseModels of this namespace are read with HF_TOKEN too "
        "(repeatable); ClusterBaseModels always are, other BaseModels without it",
    )

    cleanup = commands.add_parser(
        "cleanup",
        help="remove the local webhook registration left by a stopped (or killed) `run`, and the "
        "RuntimeReady conditions this product wrote (the other writers' are kept and listed as skipped)",
    )
    cleanup.add_argument("--dry-run", action="store_true", help="only list what would change")
    whose = cleanup.add_mutually_exclusive_group()
    whose.add_argument(
        "--conditions-only",
        action="store_true",
        help="keep away from local webhook registrations (the chart's pre-delete hook: none exist in a "
        "cluster, and it may not list them)",
    )
    whose.add_argument(
        "--instance",
        metavar="NAME",
        help="remove the local registration of this instance (default: the one `run` uses on this host with "
        "this kubeconfig context)",
    )
    whose.add_argument(
        "--all-instances",
        action="store_true",
        help="remove every local registration (label ome-selector.ome.io/local=true), whatever host made it",
    )
    cleanup.add_argument(
        "--webhook-only",
        action="store_true",
        help="remove only the local webhook registration; keep the RuntimeReady conditions",
    )
    cleanup.add_argument(
        "--any-writer",
        action="store_true",
        help="remove RuntimeReady also where another field manager last wrote status.conditions (never "
        "beside OME v1.3 or later, whose controller writes its own RuntimeReady)",
    )
    hook = cleanup.add_argument_group("uninstalling a release (the chart's pre-delete hook)")
    hook.add_argument(
        "--disarm-webhook",
        metavar="NAME",
        help="before anything else set every webhook of this ValidatingWebhookConfiguration to failurePolicy "
        "Ignore, so no fail-closed webhook outlives the operator",
    )
    hook.add_argument(
        "--stop-deployment",
        type=_namespaced_name,
        metavar="NAMESPACE/NAME",
        help="first scale the operator's Deployment to 0 and wait until its pods are gone",
    )
    hook.add_argument(
        "--delete-lease",
        type=_namespaced_name,
        metavar="NAMESPACE/NAME",
        help="last delete the operator's leader-election Lease",
    )
    hook.add_argument(
        "-n",
        "--namespace",
        action="append",
        dest="namespaces",
        metavar="NAMESPACE",
        help="only the InferenceServices of this namespace (repeatable; default: every namespace)",
    )
    hook.add_argument(
        "--timeout",
        type=_positive_seconds,
        default=120.0,
        help="seconds to wait for the stopped Deployment's pods (default 120)",
    )

    check = commands.add_parser(
        "check-webhook", help="wait until the API server reaches the InferenceService webhook (a chart hook)"
    )
    check.add_argument("-n", "--namespace", default="default", help="namespace of the dry-run probe")
    check.add_argument(
        "--timeout", type=_positive_seconds, default=120.0, help="seconds to wait (default 120)"
    )
    check.add_argument(
        "--configuration",
        metavar="NAME",
        help="first wait until this ValidatingWebhookConfiguration's InferenceService webhook is armed "
        "(a serving replica sets its failurePolicy to --failure-policy)",
    )
    check.add_argument(
        "--failure-policy",
        choices=["Fail", "Ignore"],
        default="Fail",
        help="the failurePolicy an armed configuration carries (default Fail)",
    )

    drain = commands.add_parser(
        "drain",
        help="(the pod's preStop hook) tell the operator to stop being ready and to close each webhook "
        "connection after its answer, then wait while the Service forgets this pod",
    )
    drain.add_argument(
        "--seconds", type=_seconds, default=5.0, help="how long to wait after telling it (default 5)"
    )
    drain.add_argument(
        "--pid", type=_pid, default=1, help="the operator's process (default 1: the container's first)"
    )
    add_completion_command(commands)
    return parser


#: ``--log-level`` (chart ``logLevel``).
LOG_LEVELS = ("debug", "info", "warning", "error")


def _namespaced_name(text: str) -> tuple[str, str]:
    namespace, _, name = text.partition("/")
    if not namespace or not name or "/" in name:
        raise argparse.ArgumentTypeError(f"expected NAMESPACE/NAME, got {text!r}")
    return namespace, name


def _pid(text: str) -> int:
    if not text.isdigit() or int(text) < 1:  # 0 and negative numbers would signal whole process groups
        raise argparse.ArgumentTypeError(f"expected a process id, got {text!r}")
    return int(text)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 600:
        raise argparse.ArgumentTypeError(f"expected seconds from 0 to 600, got {text!r}")
    return value


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def _add_leader_election_arguments(run: argparse.ArgumentParser) -> None:
    group = run.add_argument_group(
        "leader election (SPEC §8: replicas serve the webhook, one Lease holder writes)"
    )
    group.add_argument(
        "--leader-election",
        action="store_true",
        help="write conditions and events only while holding a coordination.k8s.io Lease "
        "(off: this process writes)",
    )
    group.add_argument(
        "--leader-election-namespace",
        help="namespace of the Lease (default: $POD_NAMESPACE, else the pod's service-account namespace, "
        "else default)",
    )
    group.add_argument(
        "--leader-election-id", default="ome-selector", help="name of the Lease (default ome-selector)"
    )
    group.add_argument(
        "--leader-election-lease-duration", type=_positive_seconds, default=15.0, help=argparse.SUPPRESS
    )
    group.add_argument(
        "--leader-election-renew-deadline", type=_positive_seconds, default=10.0, help=argparse.SUPPRESS
    )
    group.add_argument(
        "--leader-election-retry-period", type=_positive_seconds, default=2.0, help=argparse.SUPPRESS
    )


_SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def _lease_namespace(requested: str | None) -> str:
    if requested:
        return requested
    if os.environ.get("POD_NAMESPACE"):
        return os.environ["POD_NAMESPACE"]
    try:
        return _SERVICE_ACCOUNT_NAMESPACE.read_text(encoding="utf-8").strip() or "default"
    except OSError:
        return "default"


def leader_election_from_args(args: argparse.Namespace) -> LeaderElectionConfig | None:
    """The Lease of `--leader-election`, or None; ValueError for timings that would break the fence."""
    from ome_selector.kube.leaderelection import LeaseTimings  # noqa: PLC0415
    from ome_selector.operator.app import LeaderElectionConfig  # noqa: PLC0415

    if not args.leader_election:
        return None
    timings = LeaseTimings(
        args.leader_election_lease_duration,
        args.leader_election_renew_deadline,
        args.leader_election_retry_period,
    )
    return LeaderElectionConfig(
        namespace=_lease_namespace(args.leader_election_namespace),
        name=args.leader_election_id,
        timings=timings,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Console-script entry point (``ome-selector``)."""
    return quietly(lambda: _main(argv))


def _main(argv: Sequence[str] | None) -> int:
    if handled("ome-selector", _parser, list(sys.argv[1:] if argv is None else argv)):
        return 0
    args = _parser().parse_args(argv)
    if args.command == "run":
        return _run(args)
    if args.command == "drain":
        return _drain(args.pid, args.seconds)
    if args.command == "check-webhook":
        from ome_selector.cli.check_webhook import check_webhook  # noqa: PLC0415
        from ome_selector.kube.connection import ClusterAccess  # noqa: PLC0415

        access = ClusterAccess(args.kubeconfig, args.context)
        return asyncio.run(
            check_webhook(
                access,
                args.namespace,
                args.timeout,
                configuration=args.configuration,
                failure_policy=args.failure_policy,
            )
        )
    from ome_selector.kube.connection import kubeconfig_context  # noqa: PLC0415 - keeps `run` start-up lean
    from ome_selector.operator.cleanup import InCluster, run_cleanup  # noqa: PLC0415
    from ome_selector.webhook.registration import default_instance  # noqa: PLC0415

    if args.webhook_only and (
        args.conditions_only or args.stop_deployment or args.delete_lease or args.disarm_webhook
    ):
        print(
            "ome-selector cleanup: error: --webhook-only removes only local registrations; it takes none of "
            "--conditions-only, --disarm-webhook, --stop-deployment, --delete-lease",
            file=sys.stderr,
        )
        return 2
    instance = None
    if not args.all_instances and not args.conditions_only:
        instance = args.instance or default_instance(kubeconfig_context(args.kubeconfig, args.context))
    return asyncio.run(
        run_cleanup(
            kubeconfig=args.kubeconfig,
            context=args.context,
            dry_run=args.dry_run,
            instance=instance,
            webhook_only=args.webhook_only,
            any_writer=args.any_writer,
            conditions_only=args.conditions_only,
            in_cluster=InCluster(
                disarm_webhook=args.disarm_webhook,
                stop_deployment=args.stop_deployment,
                delete_lease=args.delete_lease,
                namespaces=args.namespaces,
                timeout=args.timeout,
            ),
        )
    )


def _drain(pid: int, seconds: float) -> int:
    from ome_selector.operator.signals import DRAIN_SIGNAL  # noqa: PLC0415

    try:
        os.kill(pid, DRAIN_SIGNAL)
    except OSError as error:  # no such process, or not ours
        print(f"ome-selector: error: cannot drain process {pid}: {error.strerror}", file=sys.stderr)
        return 1
    time.sleep(seconds)
    return 0


def _run(args: argparse.Namespace) -> int:
    from ome_selector.operator.app import Operator, OperatorConfig  # noqa: PLC0415
    from ome_selector.operator.kopfwiring import configure_logging  # noqa: PLC0415
    from ome_selector.operator.learning import LearningConfig  # noqa: PLC0415

    try:
        leader_election = leader_election_from_args(args)
    except ValueError as error:
        print(f"ome-selector: error: leader election: {error}", file=sys.stderr)
        return 2

    level = "debug" if args.verbose else args.log_level
    configure_logging(level, json=args.log_format == "json")
    logging.getLogger().setLevel(level.upper())
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    config = OperatorConfig(
        namespaces=args.namespaces,
        report_only=args.report_only,
        workers=args.workers,
        resync_seconds=args.resync_seconds,
        kubeconfig=args.kubeconfig,
        context=args.context,
        health_address=args.health_bind_address,
        webhook=webhook_config_from_args(args),
        leader_election=leader_election,
        model_metadata=(
            LearningConfig(
                token_namespaces=frozenset(args.token_namespace),
                report_only=args.learn_model_metadata == "report",
            )
            if args.learn_model_metadata
            else None
        ),
        runtime_lookup=RuntimeLookup(args.runtime_lookup),
    )
    asyncio.run(Operator(config).run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
