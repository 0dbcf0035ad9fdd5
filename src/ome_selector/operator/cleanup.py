"""`ome-selector cleanup`: remove what the product leaves in a cluster.

- the local ValidatingWebhookConfigurations (SPEC §8, label ``ome-selector.ome.io/local=true``) of one
  instance — this host's and kubeconfig context's by default, the one a ``kill -9`` of ``ome-selector run``
  left behind — or of every instance; the chart's static configuration is never touched;
- unless ``--webhook-only``, the RuntimeReady condition of every InferenceService that this product wrote
  (uninstalling, SPEC §8): its field manager ``ome-selector`` owns ``status.conditions`` in the object's
  managedFields. A condition another writer owns (OME v1.3's controller writes its own RuntimeReady) is kept
  and reported as skipped, unless ``--any-writer``. Every other condition and status field stays; each write
  is guarded by resourceVersion and retried on conflict (ownership checked again on the fresh object).

Run it after stopping the operator: a running one keeps its registration only until it stops (it would not
register again), and writes the condition back. The chart's pre-delete hook (SPEC §0, uninstall) runs it in
the cluster with ``--disarm-webhook`` (first set the chart's webhooks to ``failurePolicy: Ignore``, so a
hook that fails half-way, or the moments before Helm deletes the configuration, leave no fail-closed webhook
that nothing serves; SPEC §7), ``--stop-deployment`` (scale the operator to 0 and wait until its pods are
gone), ``--conditions-only`` (there is no local registration in a cluster), ``--namespace`` for a namespaced
install and ``--delete-lease`` (the leader-election Lease, which no Helm release owns).
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ome_selector.api.resources import Kind
from ome_selector.kube.clients import (
    ApiClient,
    V1Pod,
    admission_registration_api,
    apps_api,
    coordination_api,
    core_api,
)
from ome_selector.kube.connection import ClusterAccess
from ome_selector.kube.objects import ApiError, ConflictError, GoneError, Objects
from ome_selector.operator.conditions import condition_writers, current_condition, without_condition
from ome_selector.operator.writer import COMPONENT
from ome_selector.webhook.registration import remove_local_registrations

MAX_ATTEMPTS = 5
SKIPPED_TAIL = "whose RuntimeReady another writer owns (--any-writer removes it too)"
#: How often the wait for a stopped Deployment's pods looks again.
POLL_SECONDS = 1.0


@dataclass(frozen=True)
class InCluster:
    """What the chart's pre-delete hook adds to the cleanup: every field optional."""

    #: The chart's ValidatingWebhookConfiguration: every webhook set to failurePolicy Ignore, before anything.
    disarm_webhook: str | None = None
    #: (namespace, name) of the operator's Deployment: scaled to 0, then its pods awaited gone.
    stop_deployment: tuple[str, str] | None = None
    #: (namespace, name) of the leader-election Lease, deleted last.
    delete_lease: tuple[str, str] | None = None
    #: Only the InferenceServices of these namespaces (a namespaced install); None: every namespace.
    namespaces: Sequence[str] | None = None
    #: How long to wait for the stopped Deployment's pods.
    timeout: float = 120.0


async def run_cleanup(
    *,
    kubeconfig: Path | None,
    context: str | None,
    dry_run: bool,
    instance: str | None,
    webhook_only: bool = False,
    conditions_only: bool = False,
    in_cluster: InCluster = InCluster(),
    any_writer: bool = False,
) -> int:
    """``instance``: whose local registrations to remove (None: every instance's); ``any_writer``: remove the
    condition whoever wrote it."""
    api_client = await ClusterAccess(kubeconfig, context).api_client()
    disarm = in_cluster.disarm_webhook
    async with api_client:
        if disarm is not None and not await _disarmed(api_client, disarm, dry_run=dry_run):
            return 1
        if in_cluster.stop_deployment is not None:
            namespace, name = in_cluster.stop_deployment
            try:
                if dry_run:
                    print(f"would scale deployment {namespace}/{name} to 0")
                else:
                    await _stop_deployment(api_client, namespace, name, timeout=in_cluster.timeout)
            except (ApiError, TimeoutError) as error:
                reason = error.reason if isinstance(error, ApiError) else str(error)
                print(
                    f"ome-selector cleanup: cannot stop deployment {namespace}/{name}: {reason}",
                    file=sys.stderr,
                )
                return 1
            # A replica that had not begun to drain may have rewritten it (its caBundle): now none is left.
            if disarm is not None and not dry_run and not await _disarmed(api_client, disarm, quiet=True):
                return 1
        if not conditions_only:
            try:
                removed = await remove_local_registrations(api_client, instance=instance, dry_run=dry_run)
            except ApiError as error:
                print(
                    f"ome-selector cleanup: cannot remove local webhook registrations: {error.reason}",
                    file=sys.stderr,
                )
                return 1
            for name in removed:
                verb = "would remove" if dry_run else "removed"
                print(f"{verb} validatingwebhookconfiguration {name}")
        if webhook_only:
            return 0
        status = await _remove_conditions(
            api_client, dry_run=dry_run, namespaces=in_cluster.namespaces, any_writer=any_writer
        )
        if in_cluster.delete_lease is not None and status == 0:
            status = await _delete_lease(api_client, *in_cluster.delete_lease, dry_run=dry_run)
        return status


async def _disarmed(api_client: ApiClient, name: str, *, dry_run: bool = False, quiet: bool = False) -> bool:
    """:func:`_disarm_webhook`, its failure reported; False when it failed."""
    try:
        await _disarm_webhook(api_client, name, dry_run=dry_run, quiet=quiet)
    except ApiError as error:
        print(
            "ome-selector cleanup: cannot set failurePolicy Ignore on validatingwebhookconfiguration "
            f"{name}: {error.reason}",
            file=sys.stderr,
        )
        return False
    return True


async def _disarm_webhook(api_client: ApiClient, name: str, *, dry_run: bool, quiet: bool) -> None:
    """Every webhook of the configuration ``name`` to ``failurePolicy: Ignore`` (a missing one is fine): the
    operator is about to stop, and a fail-closed webhook nobody serves would block every write it covers.
    ``quiet``: say nothing when there was nothing to change."""
    api = admission_registration_api(api_client)
    for _ in range(MAX_ATTEMPTS):
        try:
            current = await api.read_validating_webhook_configuration(name)
        except ApiError as error:
            if error.status == 404:
                if not quiet:
                    print(f"validatingwebhookconfiguration {name} is absent")
                return
            raise
        armed = [hook for hook in current.webhooks or [] if hook.failure_policy != "Ignore"]
        if not armed:
            if not quiet:
                print(f"validatingwebhookconfiguration {name} already ignores failures")
            return
        if dry_run:
            print(f"would set failurePolicy Ignore on validatingwebhookconfiguration {name}")
            return
        for hook in armed:
            hook.failure_policy = "Ignore"
        try:
            await api.replace_validating_webhook_configuration(name, current)
        except ApiError as error:
            if error.status == 409:  # the operator armed it or refreshed its caBundle meanwhile
                continue
            raise
        print(f"set failurePolicy Ignore on validatingwebhookconfiguration {name}")
        return
    raise ApiError(status=409, reason=f"still conflicting after {MAX_ATTEMPTS} attempts")


async def _stop_deployment(api_client: ApiClient, namespace: str, name: str, *, timeout: float) -> None:
    """Scale the Deployment to 0 and wait until none of its pods is left (a terminating leader may still
    write during its preStop drain); a missing Deployment is already stopped."""
    apps = apps_api(api_client)
    try:
        await apps.patch_namespaced_deployment_scale(name, namespace, {"spec": {"replicas": 0}})
        deployment = await apps.read_namespaced_deployment(name, namespace)
    except ApiError as error:
        if error.status == 404:
            print(f"deployment {namespace}/{name} is absent")
            return
        raise
    labels = deployment.spec.selector.match_labels or {}
    selector = ",".join(f"{key}={value}" for key, value in sorted(labels.items()))
    print(f"scaled deployment {namespace}/{name} to 0")
    core = core_api(api_client)
    deadline = time.monotonic() + timeout
    while True:
        listed = await core.list_namespaced_pod(namespace, label_selector=selector)
        # A Job's pod is never the operator's, even with matching labels: this hook's own, for one.
        pods = [pod for pod in listed.items if not _owned_by_a_job(pod)]
        if not pods:
            print(f"no pod of deployment {namespace}/{name} is left")
            return
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{len(pods)} pod(s) still there after {timeout:g} s")
        await asyncio.sleep(POLL_SECONDS)


def _owned_by_a_job(pod: V1Pod) -> bool:
    owners = pod.metadata.owner_references or []
    return any(owner.kind == "Job" and owner.api_version == "batch/v1" for owner in owners)


async def _delete_lease(api_client: ApiClient, namespace: str, name: str, *, dry_run: bool) -> int:
    coordination = coordination_api(api_client)
    try:
        if dry_run:
            await coordination.read_namespaced_lease(name, namespace)
        else:
            await coordination.delete_namespaced_lease(name, namespace)
    except ApiError as error:
        if error.status == 404:
            return 0
        print(
            f"ome-selector cleanup: cannot delete lease {namespace}/{name}: {error.reason}", file=sys.stderr
        )
        return 1
    print(f"{'would delete' if dry_run else 'deleted'} lease {namespace}/{name}")
    return 0


async def _remove_conditions(
    api_client: ApiClient, *, dry_run: bool, namespaces: Sequence[str] | None, any_writer: bool
) -> int:
    objects = Objects(api_client)
    try:
        snapshot = await objects.list_objects(namespaces=namespaces, kinds=[Kind.INFERENCE_SERVICE])
    except ApiError as error:
        print(f"ome-selector cleanup: cannot list InferenceServices: {error.reason}", file=sys.stderr)
        return 1
    changed = skipped = failed = 0
    for body in snapshot.bodies:
        if current_condition(body.get("status")) is None:
            continue
        namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
        others = _other_writers(body, any_writer)
        if others is not None:
            print(f"skipped inferenceservice {namespace}/{name}: {_not_ours(others)}")
            skipped += 1
            continue
        if dry_run:
            print(f"would remove RuntimeReady from inferenceservice {namespace}/{name}")
            changed += 1
            continue
        try:
            outcome = await _remove(objects, body, any_writer)
        except (ApiError, ConflictError) as error:
            print(f"ome-selector cleanup: {namespace}/{name}: {error}", file=sys.stderr)
            failed += 1
            continue
        if isinstance(outcome, tuple):
            print(f"skipped inferenceservice {namespace}/{name}: {_not_ours(outcome)}")
            skipped += 1
        elif outcome:
            print(f"removed RuntimeReady from inferenceservice {namespace}/{name}")
            changed += 1
    verb = "would change" if dry_run else "changed"
    summary = f"{verb} {changed} InferenceService(s)"
    if skipped:
        summary += f", skipped {skipped} {SKIPPED_TAIL}"
    print(summary + (f", {failed} failed" if failed else ""))
    return 1 if failed else 0


def _other_writers(body: dict[str, Any], any_writer: bool) -> tuple[str, ...] | None:
    """None when the condition is this product's to remove (or ``any_writer``), else the managers that own
    it (possibly none: then nobody's managedFields claim it)."""
    if any_writer:
        return None
    writers = condition_writers(body.get("metadata"))
    return None if COMPONENT in writers else writers


def _not_ours(writers: tuple[str, ...]) -> str:
    owner = "no field manager owns it"
    if writers:
        owner = f"status.conditions last written by {', '.join(writers)}"
    return f"its RuntimeReady was not written by {COMPONENT} ({owner}); kept"


async def _remove(objects: Objects, body: dict[str, Any], any_writer: bool) -> bool | tuple[str, ...]:
    """Remove the condition from one InferenceService; False when there is nothing (left) to remove, the
    other writers when someone else took the condition over meanwhile."""
    namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
    current: dict[str, Any] | None = body
    for _ in range(MAX_ATTEMPTS):
        if current is None:
            return False  # deleted meanwhile
        status = current.get("status")
        status = status if isinstance(status, dict) else None
        if current_condition(status) is None:
            return False
        others = _other_writers(current, any_writer)
        if others is not None:
            return others
        patch = {
            "metadata": {"resourceVersion": str(current["metadata"]["resourceVersion"])},
            "status": {"conditions": without_condition((status or {}).get("conditions"))},
        }
        try:
            await objects.patch_status(
                Kind.INFERENCE_SERVICE, namespace, name, patch, field_manager=COMPONENT
            )
            return True
        except GoneError:
            return False
        except ConflictError:
            current = await objects.get(Kind.INFERENCE_SERVICE, namespace, name)
    raise ConflictError(f"{namespace}/{name}: still conflicting after {MAX_ATTEMPTS} attempts")
