"""The webhook flags of ``ome-selector run`` and the :class:`~.config.WebhookConfig` they make.

The webhook is off unless ``--webhook-bind-address`` is given.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ome_selector.webhook.config import WebhookConfig, parse_label_selector

__all__ = ["add_webhook_arguments", "webhook_config_from_args"]


def _address(text: str) -> tuple[str, int]:
    host, colon, port = text.rpartition(":")
    if not colon or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host.strip("[]") or "0.0.0.0", int(port)


def _timeout(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected whole seconds, got {text!r}") from None
    if not 1 <= value <= 30:
        raise argparse.ArgumentTypeError(f"the apiserver allows 1 to 30 seconds, got {value}")
    return value


def _selector(text: str) -> dict[str, object] | None:
    try:
        return parse_label_selector(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def add_webhook_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "admission webhook (SPEC §7; off unless --webhook-bind-address is given)"
    )
    group.add_argument(
        "--webhook-bind-address",
        type=_address,
        metavar="HOST:PORT",
        help="serve the validating webhook here (e.g. :9443; port 0 picks a free one)",
    )
    group.add_argument(
        "--webhook-cert-dir",
        type=Path,
        metavar="DIR",
        help="tls.crt, tls.key and ca.crt (a mounted Secret, e.g. cert-manager's; re-read when rotated); "
        "default: a throw-away CA and certificate generated for this run",
    )
    group.add_argument(
        "--webhook-host",
        metavar="HOST",
        help="host or IP the apiserver dials for a locally registered webhook (default: the bind address)",
    )
    group.add_argument(
        "--webhook-managed-name",
        default="ome-selector",
        metavar="PREFIX",
        help="local mode: register ValidatingWebhookConfiguration PREFIX-<random> for this run and delete it "
        "on exit (default ome-selector)",
    )
    group.add_argument(
        "--webhook-configuration",
        metavar="NAME",
        help="static mode: the chart's ValidatingWebhookConfiguration; only its caBundle is kept current",
    )
    group.add_argument(
        "--webhook-failure-policy",
        choices=["Fail", "Ignore"],
        default="Fail",
        help="failurePolicy of the InferenceService webhook (default Fail)",
    )
    group.add_argument(
        "--webhook-sizes-failure-policy",
        choices=["Fail", "Ignore"],
        default="Ignore",
        help="failurePolicy of the size/operator webhooks of models and runtimes (default Ignore)",
    )
    group.add_argument(
        "--webhook-timeout-seconds",
        type=_timeout,
        default=10,
        metavar="N",
        help="timeoutSeconds of every webhook, 1-30 (default 10)",
    )
    group.add_argument(
        "--webhook-namespace-selector",
        type=_selector,
        metavar="SELECTOR",
        help="label selector of the namespaces checked, kubectl syntax (e.g. 'ome.io/admission!=off')",
    )
    group.add_argument(
        "--strict-sizes",
        action="store_true",
        help="deny (instead of warn about) size values that do not parse, min above max and unknown "
        "operators, unless unchanged from the stored object",
    )


def webhook_config_from_args(args: argparse.Namespace) -> WebhookConfig | None:
    if args.webhook_bind_address is None:
        return None
    return WebhookConfig(
        bind_address=args.webhook_bind_address,
        host=args.webhook_host,
        cert_dir=args.webhook_cert_dir,
        managed_name=args.webhook_managed_name,
        configuration_name=args.webhook_configuration,
        failure_policy=args.webhook_failure_policy,
        sizes_failure_policy=args.webhook_sizes_failure_policy,
        timeout_seconds=args.webhook_timeout_seconds,
        namespace_selector=args.webhook_namespace_selector,
        strict_sizes=args.strict_sizes,
    )
