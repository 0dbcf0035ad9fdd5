"""Admission traffic while replicas come and go (SPEC §8): `python -m harness.availability`.

``prepare`` creates a namespace with a model of 3.21B parameters and a runtime for 500M–2B. ``churn`` then
creates an InferenceService with ``spec.engine`` (so the fail-closed webhook judges it) every ``--interval``
seconds and updates the previous one, for ``--seconds``, and prints one JSON line: attempts, failures and the
first failure messages. Each InferenceService names the too-small runtime, so the webhook allows it with a
warning and the leader records exactly one ``RuntimeCompatibilityAdvisory`` event for it. ``verify`` waits
until every one carries its condition and checks that none has two events (two replicas would have written).

Used by the e2e suite around ``kubectl rollout restart`` and the deletion of the leader pod.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Callable
from functools import partial
from typing import Any

from kubernetes import client, config

from harness import objects
from harness.kube import create, eventually, list_objects, patch, runtime_ready

MODEL = "ha-llama"
SMALL_RUNTIME = "ha-small"
PREFIX = "churn-"


def prepare(api: Any, namespace: str) -> None:
    client.CoreV1Api(api).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    create(api, objects.model(MODEL, namespace=namespace, size="3.21B"))
    create(api, objects.runtime(SMALL_RUNTIME, namespace=namespace, size_range=("500M", "2B")))


def churn(api: Any, namespace: str, seconds: float, interval: float) -> dict[str, Any]:
    attempts, failures = 0, 0
    messages: list[str] = []
    index = 0
    run = f"{PREFIX}{int(time.time()) % 100000:05d}-"  # each churn names its own objects
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        started = time.monotonic()
        body = objects.inference_service(
            f"{run}{index:05d}",
            namespace=namespace,
            model_name=MODEL,
            runtime_name=SMALL_RUNTIME,
            engine={},
        )
        writes: list[Callable[[], object]] = [partial(create, api, body)]
        if index:
            label = {"metadata": {"labels": {"ome-selector-e2e/touched": str(index)}}}
            writes.append(partial(patch, api, "InferenceService", f"{run}{index - 1:05d}", label, namespace))
        for write in writes:
            attempts += 1
            try:
                write()
            except client.ApiException as error:
                failures += 1
                if len(messages) < 5:
                    messages.append(f"{error.status} {error.reason}: {str(error.body)[:300]}")
        index += 1
        time.sleep(max(0.0, interval - (time.monotonic() - started)))
    return {"created": index, "attempts": attempts, "failures": failures, "messages": messages}


def verify(api: Any, namespace: str, timeout: float) -> dict[str, Any]:
    names = [
        str(item["metadata"]["name"])
        for item in list_objects(api, "InferenceService", namespace)
        if str(item["metadata"]["name"]).startswith(PREFIX)
    ]

    def converged() -> bool:
        return all(
            (condition := runtime_ready(api, name, namespace)) is not None
            and condition["reason"] == "RuntimeSpecified"
            for name in names
        )

    eventually(converged, timeout=timeout, interval=1.0, what="every churned InferenceService's condition")
    events = client.CoreV1Api(api).list_namespaced_event(namespace).items
    per_object = Counter(
        (str(event.involved_object.name), str(event.reason))
        for event in events
        if str(event.involved_object.name).startswith(PREFIX)
    )
    duplicates = sorted(f"{name} {reason} ×{n}" for (name, reason), n in per_object.items() if n > 1)
    missing = sorted(name for name in names if per_object[(name, "RuntimeCompatibilityAdvisory")] == 0)
    return {"inferenceServices": len(names), "duplicateEvents": duplicates, "missingEvents": missing}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.availability", description=__doc__)
    parser.add_argument("command", choices=["prepare", "churn", "verify"])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--namespace", default="ome-selector-ha")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--interval", type=float, default=0.1)
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args(argv)
    api = config.new_client_from_config(config_file=args.kubeconfig)  # type: ignore[no-untyped-call]
    with api:
        if args.command == "prepare":
            prepare(api, args.namespace)
            return 0
        if args.command == "churn":
            result = churn(api, args.namespace, args.seconds, args.interval)
            print(json.dumps(result))
            return 0 if result["failures"] == 0 else 1
        result = verify(api, args.namespace, args.timeout)
        print(json.dumps(result))
        return 0 if not result["duplicateEvents"] and not result["missingEvents"] else 1


if __name__ == "__main__":
    sys.exit(main())
