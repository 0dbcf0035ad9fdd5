"""The client layer (kube/objects.py) against the real apiserver: paged consistent listing, get, status
patch and events."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import pytest
from kubernetes import client

from harness import objects
from harness.controlplane import ControlPlane
from harness.kube import create, delete, events_for, get, patch
from ome_selector.api.resources import API_GROUP_VERSION, Kind
from ome_selector.kube import objects as kube_objects
from ome_selector.kube import scope
from ome_selector.kube.connection import ClusterAccess
from ome_selector.kube.objects import ApiError, ConflictError, GoneError, Objects
from ome_selector.kube.watchlist import StreamingListRefusedError, watch_list_query

T = TypeVar("T")


def _with_objects(control_plane: ControlPlane, action: Callable[[Objects], Awaitable[T]]) -> T:
    async def run() -> T:
        api_client = await ClusterAccess(control_plane.kubeconfig).api_client()
        async with api_client:
            return await action(Objects(api_client))

    return asyncio.run(run())


def _names(bodies: list[dict[str, Any]], kind: str) -> list[str]:
    return sorted(body["metadata"]["name"] for body in bodies if body["kind"] == kind)


def test_listing_pages_through_every_kind_at_one_resource_version(
    control_plane: ControlPlane,
    api_client: Any,
    namespace: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    other = f"{namespace}-other"
    core: Any = client.CoreV1Api(api_client)
    core.create_namespace({"metadata": {"name": other}})
    for index in range(5):
        create(api_client, objects.model(f"m{index}", namespace=namespace))
        create(api_client, objects.runtime(f"r{index}", namespace=namespace))
    create(api_client, objects.model("elsewhere", namespace=other))
    monkeypatch.setattr(kube_objects, "PAGE_SIZE", 2)  # five objects of a kind take three pages
    # A model created right after the first page: the later lists, read at the first one's
    # resourceVersion, must not see it.
    late: list[dict[str, Any]] = []
    real_call = scope.custom_object_call

    def call_then_create(*args: Any, **kwargs: Any) -> Callable[..., Awaitable[Any]]:
        call = real_call(*args, **kwargs)

        async def listed(*call_args: Any, **call_kwargs: Any) -> Any:
            page = await call(*call_args, **call_kwargs)
            if not late:
                late.append(create(api_client, objects.model("late", namespace=namespace)))
            return page

        return listed

    monkeypatch.setattr(kube_objects, "custom_object_call", call_then_create)

    snapshot = _with_objects(control_plane, lambda o: o.list_objects(namespaces=[namespace]))

    assert late, "the model was created while listing"
    assert _names(snapshot.bodies, "BaseModel") == [f"m{index}" for index in range(5)]
    assert _names(snapshot.bodies, "ServingRuntime") == [f"r{index}" for index in range(5)]
    assert all(body["apiVersion"] == API_GROUP_VERSION for body in snapshot.bodies)
    monkeypatch.setattr(kube_objects, "custom_object_call", real_call)
    everywhere = _with_objects(control_plane, lambda o: o.list_objects(kinds=[Kind.BASE_MODEL]))
    assert {"elsewhere", "late", "m0"} <= set(_names(everywhere.bodies, "BaseModel"))


def _five_models_and_a_runtime_in_pages_of_two(
    api_client: Any, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """m0…m4 and r0 in ``namespace``, listed two to a page: the models take three pages, the runtime one."""
    for index in range(5):
        create(api_client, objects.model(f"m{index}", namespace=namespace))
    create(api_client, objects.runtime("r0", namespace=namespace))
    monkeypatch.setattr(kube_objects, "PAGE_SIZE", 2)


def test_list_pages_hands_out_one_page_at_a_time_at_one_resource_version(
    control_plane: ControlPlane, api_client: Any, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _five_models_and_a_runtime_in_pages_of_two(api_client, namespace, monkeypatch)
    reads: list[str] = []
    failing: list[str] = []  # the kinds whose listing fails
    real_call = scope.custom_object_call

    def counted(*args: Any, **kwargs: Any) -> Callable[..., Awaitable[Any]]:
        call = real_call(*args, **kwargs)

        async def listed(*call_args: Any, **call_kwargs: Any) -> Any:
            reads.append(str(args[2]))
            if str(args[2]) in failing:
                raise kube_objects.ApiError(status=500, reason="Internal Server Error")
            return await call(*call_args, **call_kwargs)

        return listed

    monkeypatch.setattr(kube_objects, "custom_object_call", counted)
    kinds = [Kind.BASE_MODEL, Kind.SERVING_RUNTIME]

    async def consume(o: Objects) -> list[tuple[str, str | None, list[str], int]]:
        seen: list[tuple[str, str | None, list[str], int]] = []
        async for page in o.list_pages(namespaces=[namespace], kinds=kinds):
            names = [body["metadata"]["name"] for body in page.bodies]
            assert all(body["kind"] == page.kind.value for body in page.bodies)
            assert all(body["apiVersion"] == API_GROUP_VERSION for body in page.bodies)
            seen.append((page.kind.value, page.resource_version, names, len(reads)))
            if len(seen) == 1:
                # Created after the first page: the later pages, read at its resourceVersion, lack it.
                create(api_client, objects.model("late", namespace=namespace))
                create(api_client, objects.runtime("late", namespace=namespace))
        return seen

    pages = _with_objects(control_plane, consume)
    (version,) = {version for _, version, _, _ in pages}
    assert version is not None
    assert [(kind, names) for kind, _, names, _ in pages] == [
        ("BaseModel", ["m0", "m1"]),
        ("BaseModel", ["m2", "m3"]),
        ("BaseModel", ["m4"]),
        ("ServingRuntime", ["r0"]),
    ]
    # Each page was read only once the one before it had been consumed.
    assert [read for _, _, _, read in pages] == [1, 2, 3, 4]
    assert reads == ["BaseModel"] * 3 + ["ServingRuntime"]
    # A listing that fails part way hands out what it read, then the error.
    failing.append("ServingRuntime")
    handed: list[str] = []

    async def fail(o: Objects) -> None:
        async for page in o.list_pages(namespaces=[namespace], kinds=kinds):
            handed.extend(body["metadata"]["name"] for body in page.bodies)

    with pytest.raises(kube_objects.ApiError):
        _with_objects(control_plane, fail)
    assert handed == ["late", "m0", "m1", "m2", "m3", "m4"]


def test_stream_pages_streams_each_kind_in_batches_and_falls_back_to_pages_where_refused(
    control_plane: ControlPlane, api_client: Any, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _five_models_and_a_runtime_in_pages_of_two(api_client, namespace, monkeypatch)
    kinds = [Kind.BASE_MODEL, Kind.SERVING_RUNTIME]

    async def consume(o: Objects) -> tuple[list[tuple[str, str | None, list[str]]], bool]:
        seen: list[tuple[str, str | None, list[str]]] = []
        async for page in o.stream_pages(namespaces=[namespace], kinds=kinds):
            assert all(body["kind"] == page.kind.value for body in page.bodies)
            assert all(body["apiVersion"] == API_GROUP_VERSION for body in page.bodies)
            seen.append(
                (page.kind.value, page.resource_version, [b["metadata"]["name"] for b in page.bodies])
            )
            if len(seen) == 1:
                # The runtimes are streamed after this: at least as new as the models, so they hold it.
                create(api_client, objects.runtime("late", namespace=namespace))
        return seen, o.streaming

    pages, streaming = _with_objects(control_plane, consume)
    assert streaming  # this apiserver streams lists
    models = [page for page in pages if page[0] == "BaseModel"]
    assert [len(names) for _, _, names in models] == [2, 2, 1]  # batches of PAGE_SIZE
    assert sorted(name for _, _, names in models for name in names) == [f"m{i}" for i in range(5)]
    assert [version is not None for _, version, _ in models] == [False, False, True]  # the end's version
    runtimes = sorted(name for kind, _, names in pages if kind == "ServingRuntime" for name in names)
    assert runtimes == ["late", "r0"]
    assert int(pages[-1][1] or 0) >= int(models[-1][1] or 0)

    # A stream that breaks off before its end (an apiserver shutting down) is read again in pages, that kind
    # only: the next listing streams again.
    async def cut_short(events: Any, batch: int) -> AsyncIterator[tuple[list[dict[str, Any]], str | None]]:
        async for _ in events:
            break
        raise StreamingListRefusedError("the stream ended before the end of the initial state", lasting=False)
        yield  # an async generator, as the real reader is

    async def sizes(o: Objects) -> tuple[list[tuple[str, int]], bool]:
        listed = [
            (p.kind.value, len(p.bodies)) async for p in o.stream_pages(namespaces=[namespace], kinds=kinds)
        ]
        return listed, o.streaming

    with monkeypatch.context() as patched:
        patched.setattr(kube_objects, "initial_state", cut_short)
        listed, streaming = _with_objects(control_plane, sizes)
    assert streaming
    assert listed == [("BaseModel", 2), ("BaseModel", 2), ("BaseModel", 1), ("ServingRuntime", 2)]  # pages

    # An apiserver that refuses (here: a query it rejects, 422 as with its WatchList feature off) is read in
    # pages, then and for every later listing of this client.
    def refused(version: str | None) -> list[tuple[str, Any]]:
        return [(key, value) for key, value in watch_list_query(version) if key != "resourceVersionMatch"]

    monkeypatch.setattr(kube_objects, "watch_list_query", refused)

    async def twice(o: Objects) -> tuple[list[str], bool, list[str]]:
        first = [
            b["metadata"]["name"]
            async for p in o.stream_pages(namespaces=[namespace], kinds=kinds)
            for b in p.bodies
        ]
        streaming = o.streaming
        again = [
            b["metadata"]["name"]
            async for p in o.stream_pages(namespaces=[namespace], kinds=kinds)
            for b in p.bodies
        ]
        return first, streaming, again

    first, streaming, again = _with_objects(control_plane, twice)
    assert not streaming
    assert first == again == ["m0", "m1", "m2", "m3", "m4", "late", "r0"]


def test_metadata_listing_names_each_object_and_its_version_only(
    control_plane: ControlPlane, api_client: Any, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for index in range(5):
        create(api_client, objects.runtime(f"r{index}", namespace=namespace))
    monkeypatch.setattr(kube_objects, "METADATA_PAGE_SIZE", 2)  # five objects take three pages
    kinds = [Kind.SERVING_RUNTIME]

    async def both(o: Objects) -> tuple[kube_objects.Snapshot, kube_objects.Listing]:
        full = await o.list_objects(namespaces=[namespace], kinds=kinds)
        return full, await o.list_versions(Kind.SERVING_RUNTIME, namespace)

    full, listing = _with_objects(control_plane, both)
    assert len(listing.pages) == 3
    assert listing.bodies() == [
        {
            "apiVersion": API_GROUP_VERSION,
            "kind": "ServingRuntime",
            "metadata": {
                "name": body["metadata"]["name"],
                "namespace": namespace,
                "uid": body["metadata"]["uid"],
                "resourceVersion": body["metadata"]["resourceVersion"],
                "generation": 1,
            },
        }
        for body in full.bodies
    ]


def test_a_listing_digest_changes_with_the_listed_objects_only(
    control_plane: ControlPlane, api_client: Any, namespace: str
) -> None:
    create(api_client, objects.runtime("r0", namespace=namespace))

    def digest() -> bytes:
        listing = _with_objects(control_plane, lambda o: o.list_versions(Kind.SERVING_RUNTIME, namespace))
        return listing.digest

    first = digest()
    create(api_client, objects.model("elsewhere", namespace=namespace))  # the listing's resourceVersion moves
    assert digest() == first
    create(api_client, objects.runtime("r1", namespace=namespace))
    second = digest()
    assert second != first
    patch(api_client, "ServingRuntime", "r1", {"metadata": {"labels": {"touched": "yes"}}}, namespace)
    assert digest() not in (first, second)
    delete(api_client, "ServingRuntime", "r1", namespace)
    assert digest() == first  # the same object at the same version again


def test_a_sifted_listing_keeps_what_the_predicate_accepts_and_sees_every_object(
    control_plane: ControlPlane, api_client: Any, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for index in range(5):
        create(api_client, objects.runtime(f"r{index}", namespace=namespace))
    monkeypatch.setattr(kube_objects, "PAGE_SIZE", 2)  # five objects take three pages
    seen: list[str] = []

    def odd(body: dict[str, Any]) -> bool:
        seen.append(f"{body['kind']}/{body['metadata']['name']}")
        return int(body["metadata"]["name"][1:]) % 2 == 1

    kept = _with_objects(
        control_plane,
        lambda o: o.list_objects_where(odd, namespaces=[namespace], kinds=[Kind.SERVING_RUNTIME]),
    )
    assert seen == [f"ServingRuntime/r{index}" for index in range(5)]
    assert _names(kept.bodies, "ServingRuntime") == ["r1", "r3"]
    assert all(body["spec"]["supportedModelFormats"] for body in kept.bodies)  # whole objects
    assert kept.resource_version is not None


def test_get_reads_either_scope_and_answers_none_for_a_missing_object(
    control_plane: ControlPlane, api_client: Any, namespace: str, cluster_objects: list[tuple[str, str]]
) -> None:
    name = f"{namespace}-cluster-model"
    create(api_client, objects.model(name))
    cluster_objects.append(("ClusterBaseModel", name))
    create(api_client, objects.model("local", namespace=namespace))

    async def read(o: Objects) -> list[dict[str, Any] | None]:
        return [
            await o.get(Kind.CLUSTER_BASE_MODEL, None, name),
            await o.get(Kind.BASE_MODEL, namespace, "local"),
            await o.get(Kind.BASE_MODEL, namespace, "absent"),
        ]

    cluster, local, absent = _with_objects(control_plane, read)
    assert cluster is not None
    assert cluster["kind"] == "ClusterBaseModel"
    assert local is not None
    assert local["metadata"]["namespace"] == namespace
    assert absent is None


def test_status_patch_is_guarded_by_resource_version(
    control_plane: ControlPlane, api_client: Any, namespace: str
) -> None:
    create(api_client, objects.inference_service("svc", namespace=namespace, model_name="m"))
    stale = get(api_client, "InferenceService", "svc", namespace)["metadata"]["resourceVersion"]
    condition = {
        "type": "Ready",
        "status": "True",
        "reason": "Up",
        "lastTransitionTime": "2025-01-01T00:00:00Z",
    }

    def status_patch(version: str, name: str = "svc") -> Callable[[Objects], Awaitable[dict[str, Any]]]:
        body = {"metadata": {"resourceVersion": version}, "status": {"conditions": [condition]}}
        return lambda o: o.patch_status(Kind.INFERENCE_SERVICE, namespace, name, body, field_manager="test")

    written = _with_objects(control_plane, status_patch(stale))
    assert written["status"]["conditions"] == [condition]
    assert written["metadata"]["resourceVersion"] != stale
    with pytest.raises(ConflictError, match=f"{namespace}/svc"):
        _with_objects(control_plane, status_patch(stale))
    with pytest.raises(GoneError, match=f"{namespace}/gone"):
        _with_objects(control_plane, status_patch(stale, name="gone"))


def test_event_names_the_object_and_the_reporter(
    control_plane: ControlPlane, api_client: Any, namespace: str
) -> None:
    body = create(api_client, objects.inference_service("svc", namespace=namespace, model_name="m"))

    _with_objects(
        control_plane,
        lambda o: o.create_event(
            Kind.INFERENCE_SERVICE,
            body,
            type_="Warning",
            reason="Checked",
            message="x" * 2000,
            component="ome-selector",
            instance="pod-1",
        ),
    )

    (event,) = events_for(api_client, namespace, "svc")
    assert (event.type, event.reason, event.message) == ("Warning", "Checked", "x" * 1024)
    involved = event.involved_object
    assert (involved.api_version, involved.kind, involved.uid) == (
        API_GROUP_VERSION,
        "InferenceService",
        body["metadata"]["uid"],
    )
    assert (event.reporting_component, event.reporting_instance) == ("ome-selector", "pod-1")


def test_a_refused_event_is_an_api_error(control_plane: ControlPlane) -> None:
    """The created Event is not parsed back, but a refusal still raises (here: no such namespace)."""
    involved = {"metadata": {"name": "svc", "namespace": "no-such-namespace", "uid": "u"}}
    with pytest.raises(ApiError) as raised:
        _with_objects(
            control_plane,
            lambda o: o.create_event(
                Kind.INFERENCE_SERVICE,
                involved,
                type_="Warning",
                reason="Checked",
                message="x",
                component="ome-selector",
                instance="pod-1",
            ),
        )
    assert raised.value.status == 404
    assert "no-such-namespace" in str(raised.value.body)
