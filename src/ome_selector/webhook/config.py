"""How the admission webhook is served and registered (CLI flags of ``ome-selector run``, chart values).

Two ways to register the webhook with the apiserver:

- **local** (default; tests, the demo, a laptop against any cluster): the operator writes the
  ValidatingWebhookConfiguration ``<managed_name>-local-<instance>`` (SPEC §8) pointing at
  ``https://<host>:<port>/<path>``, replacing the one an earlier run of the same instance left behind, and
  deletes it when it stops.
- **static** (``configuration_name`` set; in a cluster): the chart ships the configuration (service
  clientConfig); the operator only keeps the ``caBundle`` of its webhooks equal to the CA it serves with.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "DEFAULT_BIND_ADDRESS",
    "FailurePolicy",
    "WebhookConfig",
    "parse_label_selector",
]

FailurePolicy = Literal["Fail", "Ignore"]
DEFAULT_BIND_ADDRESS = ("0.0.0.0", 9443)


@dataclass(frozen=True)
class WebhookConfig:
    bind_address: tuple[str, int] = DEFAULT_BIND_ADDRESS
    #: Host name or IP the apiserver dials in local mode (default: the bind address; 127.0.0.1 for 0.0.0.0).
    host: str | None = None
    #: A directory with ``tls.crt``, ``tls.key`` and optionally ``ca.crt`` (a mounted Secret, re-read when it
    #: changes); None generates a throw-away CA and certificate for this run.
    cert_dir: Path | None = None
    #: Local mode: prefix of the ValidatingWebhookConfiguration name, ``<managed_name>-local-<instance>``.
    managed_name: str = "ome-selector"
    #: Local mode: the instance in that name (``--instance``); None: :func:`~.registration.default_instance`
    #: of the kubeconfig context and the host name.
    instance: str | None = None
    #: Static mode: the name of the chart's ValidatingWebhookConfiguration (its caBundle is kept current).
    configuration_name: str | None = None
    #: failurePolicy of the InferenceService webhook.
    failure_policy: FailurePolicy = "Fail"
    #: failurePolicy of the webhooks that only warn about size values and operators (unless strict).
    sizes_failure_policy: FailurePolicy = "Ignore"
    timeout_seconds: int = 10
    #: A label selector (the ``metav1.LabelSelector`` shape) restricting the namespaces the webhooks see.
    namespace_selector: dict[str, Any] | None = None
    #: Deny (instead of warn about) size values that do not parse, ``min`` above ``max``, unknown operators.
    strict_sizes: bool = False
    #: SPEC §12: warn about the impact of a model or runtime change (and about runtimes it makes ambiguous).
    catalog_impact: bool = True
    #: SPEC §12: deny a change that leaves InferenceServices that have a runtime now without one.
    protect_inference_services: bool = False
    #: SPEC §12: deny a runtime change that adds a SIZE003 or RANK001 finding involving that runtime.
    deny_ambiguous_runtimes: bool = False
    #: SPEC §12: the longest a catalog review computes its impact (past it: the "not computed" warning).
    impact_budget: float = 0.08
    #: How often mounted certificate files are checked for rotation.
    file_check_interval: float = 60.0
    #: Only for benchmarks: answer every request "allowed" without looking at it (a no-op webhook).
    noop: bool = False
    #: In-cluster certificate mode (the chart's default), ``NAMESPACE/NAME``: the CA and serving certificate
    #: are generated into this Secret (kept across restarts) and written as files into ``cert_dir``
    #: (:mod:`.incluster`).
    cert_secret: str | None = None
    #: ``NAMESPACE/NAME`` of the webhook Service: its DNS names go into a generated certificate.
    service: str | None = None
    #: A PEM bundle of the CAs whose client certificates may call the webhook; None: any client may (the
    #: apiserver presents one when its admission configuration names a kubeconfig for webhooks).
    client_ca_file: Path | None = None
    #: With ``client_ca_file``: the accepted subject common names or DNS names (empty: any it issued).
    client_names: tuple[str, ...] = ()
    #: With ``client_ca_file``: ask for a client certificate without requiring one. A caller without a
    #: verified certificate of an accepted name is answered too, but is never told the names of another
    #: namespace's objects (SPEC §12); with it, the caller is the apiserver and is told everything.
    client_cert_optional: bool = False
    #: Confirming reads (SPEC §7) started per second, and how many may start at once; past that, a request
    #: that needs one waits up to :data:`~.confirming.CONFIRMATION_WAIT` seconds, else gets HTTP 429.
    confirmations_per_second: float = 20.0
    confirmation_burst: int = 40
    #: Static mode only: the caBundle is injected by someone else (cert-manager's cainjector); the operator
    #: never reads or writes the configuration.
    ca_injected: bool = False

    def __post_init__(self) -> None:
        if not 1 <= self.timeout_seconds <= 30:
            raise ValueError(f"webhook timeout must be between 1 and 30 seconds, got {self.timeout_seconds}")
        for policy in (self.failure_policy, self.sizes_failure_policy):
            if policy not in ("Fail", "Ignore"):
                raise ValueError(f"failurePolicy must be Fail or Ignore, got {policy!r}")
        if self.cert_secret is not None and self.cert_dir is None:
            raise ValueError("a certificate Secret needs a certificate directory to write the files into")
        for reference in (self.cert_secret, self.service):
            if reference is not None and not _REFERENCE.fullmatch(reference):
                raise ValueError(f"expected NAMESPACE/NAME, got {reference!r}")
        if self.client_names and self.client_ca_file is None:
            raise ValueError("accepted client certificate names need a client CA file")
        if self.client_cert_optional and self.client_ca_file is None:
            raise ValueError("an optional client certificate needs a client CA file")
        if self.confirmations_per_second <= 0 or self.confirmation_burst < 1:
            raise ValueError("the confirmation rate must be positive and its burst at least 1")
        if self.ca_injected and self.configuration_name is None:
            raise ValueError("an injected caBundle needs the static configuration's name")
        if not _NAME.fullmatch(self.managed_name) or len(self.managed_name) > 180:
            raise ValueError(
                f"webhook configuration name prefix {self.managed_name!r} is not a DNS subdomain"
            )
        if self.instance is not None and (not _LABEL.fullmatch(self.instance) or len(self.instance) > 63):
            raise ValueError(f"instance {self.instance!r} is not a DNS label (lower case, digits and '-')")


_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")
_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_REFERENCE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?/[a-z0-9]([-a-z0-9.]*[a-z0-9])?")
_KEY = r"[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?"
_VALUE = r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?|"
_SET = re.compile(rf"\s*(?P<key>{_KEY})\s+(?P<op>in|notin)\s+\((?P<values>[^)]*)\)\s*")
_EQUALITY = re.compile(rf"\s*(?P<key>{_KEY})\s*(?P<op>==|=|!=)\s*(?P<value>{_VALUE})\s*")
_EXISTS = re.compile(rf"\s*(?P<neg>!?)\s*(?P<key>{_KEY})\s*")


def parse_label_selector(text: str) -> dict[str, Any] | None:
    """A kubectl-style label selector (``a=b,c!=d,e in (f,g),!h``) as a ``metav1.LabelSelector`` dict.

    Empty text gives None (every namespace). Raises ValueError naming the requirement it cannot read.
    """
    requirements = _split(text)
    if not requirements:
        return None
    match_labels: dict[str, str] = {}
    expressions: list[dict[str, Any]] = []
    for requirement in requirements:
        if found := _SET.fullmatch(requirement):
            values = [v.strip() for v in found["values"].split(",") if v.strip()]
            if not values:
                raise ValueError(f"label selector requirement {requirement.strip()!r} has no values")
            operator = "In" if found["op"] == "in" else "NotIn"
            expressions.append({"key": found["key"], "operator": operator, "values": values})
        elif found := _EQUALITY.fullmatch(requirement):
            if found["op"] == "!=":
                expressions.append({"key": found["key"], "operator": "NotIn", "values": [found["value"]]})
            else:
                match_labels[found["key"]] = found["value"]
        elif found := _EXISTS.fullmatch(requirement):
            operator = "DoesNotExist" if found["neg"] else "Exists"
            expressions.append({"key": found["key"], "operator": operator})
        else:
            raise ValueError(f"cannot read label selector requirement {requirement.strip()!r}")
    selector: dict[str, Any] = {}
    if match_labels:
        selector["matchLabels"] = match_labels
    if expressions:
        selector["matchExpressions"] = expressions
    return selector


def _split(text: str) -> list[str]:
    """Split at commas outside parentheses."""
    parts: list[str] = []
    depth, start = 0, 0
    for index, char in enumerate(text):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    parts.append(text[start:])
    return [part for part in parts if part.strip()]
