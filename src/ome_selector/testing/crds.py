"""Install the project's CRDs into a cluster and wait until the apiserver serves them."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from ome_selector.crds import crd_documents

ESTABLISH_TIMEOUT_S = 60.0


def install_crds(kubeconfig: Path) -> None:
    api_client = config.new_client_from_config(config_file=str(kubeconfig))  # type: ignore[no-untyped-call]
    with api_client:
        # Plain dict bodies: the typed client models would only re-encode the same YAML.
        extensions: Any = client.ApiextensionsV1Api(api_client)
        names = []
        for document in crd_documents():
            name = document["metadata"]["name"]
            names.append(name)
            try:
                extensions.create_custom_resource_definition(document)
            except ApiException as error:
                if error.status != 409:
                    raise
                current = extensions.read_custom_resource_definition(name)
                metadata = {**document["metadata"], "resourceVersion": current.metadata.resource_version}
                extensions.replace_custom_resource_definition(name, {**document, "metadata": metadata})
        deadline = time.monotonic() + ESTABLISH_TIMEOUT_S
        pending = set(names)
        while pending:
            for name in sorted(pending):
                crd = extensions.read_custom_resource_definition(name)
                conditions = (crd.status and crd.status.conditions) or []
                if any(c.type == "Established" and c.status == "True" for c in conditions):
                    pending.discard(name)
            if pending:
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"CRDs not Established after {ESTABLISH_TIMEOUT_S:.0f}s: {sorted(pending)}"
                    )
                time.sleep(0.1)
