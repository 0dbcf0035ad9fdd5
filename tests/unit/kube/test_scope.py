"""The one namespaced-or-cluster choice (kube/scope.py): which client method, with which leading arguments."""

from __future__ import annotations

from typing import Any

import pytest

from ome_selector.api.resources import API_GROUP, API_VERSION, Kind
from ome_selector.kube.scope import Verb, custom_object_call


class Recorder:
    """Any client method: answers with its own name and the arguments it got."""

    def __getattr__(self, method: str) -> Any:
        return lambda *args, **kwargs: (method, args, kwargs)


@pytest.mark.parametrize("verb", ["get", "list", "create", "replace", "patch", "delete"])
@pytest.mark.parametrize("kind", list(Kind))
def test_without_namespace_the_cluster_call(verb: Verb, kind: Kind) -> None:
    call = custom_object_call(Recorder(), verb, kind, None)
    assert call("x", dry_run="All") == (
        f"{verb}_cluster_custom_object",
        (API_GROUP, API_VERSION, kind.plural, "x"),
        {"dry_run": "All"},
    )


@pytest.mark.parametrize("verb", ["get", "list", "create", "replace", "patch", "delete"])
@pytest.mark.parametrize("kind", [kind for kind in Kind if kind.namespaced])
def test_with_namespace_the_namespaced_call(verb: Verb, kind: Kind) -> None:
    call = custom_object_call(Recorder(), verb, kind, "team-a")
    assert call("x") == (
        f"{verb}_namespaced_custom_object",
        (API_GROUP, API_VERSION, "team-a", kind.plural, "x"),
        {},
    )


def test_status_subresource_variants() -> None:
    namespaced = custom_object_call(Recorder(), "patch", Kind.INFERENCE_SERVICE, "ns", status=True)
    cluster = custom_object_call(Recorder(), "replace", Kind.CLUSTER_BASE_MODEL, None, status=True)
    assert namespaced("x")[0] == "patch_namespaced_custom_object_status"
    assert cluster("x")[0] == "replace_cluster_custom_object_status"


@pytest.mark.parametrize("kind", [kind for kind in Kind if not kind.namespaced])
def test_a_cluster_scoped_kind_has_no_namespace(kind: Kind) -> None:
    with pytest.raises(ValueError, match=f"{kind.value} is cluster-scoped"):
        custom_object_call(Recorder(), "get", kind, "team-a")
