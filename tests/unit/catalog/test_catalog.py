"""The catalog: lookups, incremental updates, the format index, and who to re-evaluate."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from selection_builders import NS, catalog, entry, isvc, model, resolve_runtime, runtime

from ome_selector.api.resources import Kind, ObjectKey, Resource
from ome_selector.catalog.catalog import Catalog
from ome_selector.selection.inheritance import find_named_runtime
from ome_selector.selection.view import CatalogView


def test_resolve_model_prefers_the_namespace() -> None:
    c = catalog(model("m", fmt="cluster"), model("m", fmt="local", namespace=NS))
    local = c.resolve_model(NS, "m")
    assert local is not None
    assert local.spec.format_name == "local"
    cluster = c.resolve_model("other", "m")
    assert cluster is not None
    assert cluster.spec.format_name == "cluster"
    assert c.resolve_model(NS, "missing") is None


def test_resolve_runtime_prefers_the_namespace() -> None:
    c = catalog(runtime("rt", entry("cluster")), runtime("rt", entry("local"), namespace=NS))
    local = find_named_runtime(c, NS, "rt", None)
    assert local is not None
    assert local.runtime.kind is Kind.SERVING_RUNTIME
    cluster = find_named_runtime(c, "other", "rt", None)
    assert cluster is not None
    assert cluster.runtime.kind is Kind.CLUSTER_SERVING_RUNTIME
    assert find_named_runtime(c, NS, "nope", None) is None


def test_runtimes_visible_from_a_namespace() -> None:
    c = catalog(
        runtime("b", entry(), namespace=NS),
        runtime("z"),
        runtime("a", entry(), namespace=NS),
        runtime("c", namespace="other"),
        runtime("y"),
    )
    assert [(p.runtime.kind.value, p.name) for p in c.runtime_profiles_visible_from(NS)] == [
        ("ServingRuntime", "a"),
        ("ServingRuntime", "b"),
        ("ClusterServingRuntime", "y"),
        ("ClusterServingRuntime", "z"),
    ]
    assert c.runtime_counts(NS) == (2, 2)
    assert c.runtime_counts("empty") == (0, 2)


def test_the_runtimes_stamp_changes_with_every_runtime_stored_or_removed_and_nothing_else() -> None:
    c = catalog(runtime("rt"))
    stamps = [c.runtimes_stamp, Catalog().runtimes_stamp, catalog(runtime("rt")).runtimes_stamp]
    c.upsert(model("m"))
    c.upsert(isvc("svc"))
    assert c.runtimes_stamp == stamps[0]
    c.upsert(runtime("rt", entry("other")))
    assert c.runtimes_stamp not in stamps
    stamps.append(c.runtimes_stamp)
    c.upsert(runtime("rt2", namespace=NS))
    assert c.runtimes_stamp not in stamps
    stamps.append(c.runtimes_stamp)
    c.remove(ObjectKey(Kind.SERVING_RUNTIME, NS, "rt2"))
    assert c.runtimes_stamp not in stamps
    stamps.append(c.runtimes_stamp)
    c.remove(ObjectKey(Kind.SERVING_RUNTIME, NS, "rt2"))  # nothing to remove
    assert c.runtimes_stamp == stamps[-1]
    assert len(set(stamps)) == len(stamps)  # no two catalogs share a stamp either


def test_format_index_follows_updates() -> None:
    c = catalog(
        runtime("rt", entry("onnx"), entry("safetensors")), runtime("local", entry("onnx"), namespace=NS)
    )
    assert [p.name for p in c.runtime_profiles_for_format(NS, "onnx")] == ["local", "rt"]
    assert [p.name for p in c.runtime_profiles_for_format("other", "onnx")] == ["rt"]
    c.upsert(runtime("rt", entry("gguf")))  # replaced: no longer serves onnx or safetensors
    assert [p.name for p in c.runtime_profiles_for_format(NS, "onnx")] == ["local"]
    assert c.runtime_profiles_for_format(NS, "safetensors") == []
    assert [p.name for p in c.runtime_profiles_for_format(NS, "gguf")] == ["rt"]
    removed = c.remove(ObjectKey(Kind.SERVING_RUNTIME, NS, "local"))
    assert removed is not None
    assert c.runtime_profiles_for_format(NS, "onnx") == []
    assert c.remove(ObjectKey(Kind.SERVING_RUNTIME, NS, "local")) is None


def test_later_object_with_the_same_key_wins() -> None:
    c = Catalog.from_resources([runtime("rt", entry("a")), runtime("rt", entry("b"))])
    assert len(c) == 1
    rt = resolve_runtime(c, NS, "rt")
    assert rt is not None
    assert rt.spec.supported_model_formats[0].model_format is not None
    assert rt.spec.supported_model_formats[0].model_format.name == "b"


def test_runtimes_are_compiled_once() -> None:
    c = catalog(runtime("rt", entry(), min="2B", max="4B"))
    first = find_named_runtime(c, NS, "rt", None)
    assert first is not None
    assert first.lower == 2 * 10**9
    assert find_named_runtime(c, NS, "rt", None) is first


def test_model_profiles_are_cached_for_stored_models() -> None:
    m = model(size="3B")
    c = catalog(m)
    assert c.model_profile(m) is c.model_profile(m)
    other = model(size="4B")  # same key, not the stored object
    assert c.model_profile(other).size == 4 * 10**9


def test_inference_services_referencing_a_model() -> None:
    services = [
        isvc("a", model_name="m", namespace=NS),
        isvc("b", model_name="m", namespace="other"),
        isvc("c", model_name="n", namespace=NS),
        isvc("d", model_name=None, namespace=NS),
    ]
    c = catalog(*services, model("m", namespace=NS))
    base = ObjectKey(Kind.BASE_MODEL, NS, "m")
    cluster = ObjectKey(Kind.CLUSTER_BASE_MODEL, None, "m")
    assert [k.name for k in c.inference_services_referencing_model(base)] == ["a"]
    # The ClusterBaseModel is shadowed in NS, but candidates are still returned (over-approximation).
    assert sorted(k.name for k in c.inference_services_referencing_model(cluster)) == ["a", "b"]
    c.upsert(isvc("a", model_name="n", namespace=NS))  # the InferenceService switched models
    assert c.inference_services_referencing_model(base) == []
    c.remove(ObjectKey(Kind.INFERENCE_SERVICE, "other", "b"))
    assert c.inference_services_referencing_model(cluster) == []


def test_inference_services_affected_by_a_runtime() -> None:
    c = catalog(isvc("a", namespace=NS), isvc("b", namespace="other"), isvc("c", namespace=NS))
    namespaced = ObjectKey(Kind.SERVING_RUNTIME, NS, "rt")
    cluster = ObjectKey(Kind.CLUSTER_SERVING_RUNTIME, None, "rt")
    assert [k.name for k in c.inference_services_affected_by_runtime(namespaced)] == ["a", "c"]
    assert sorted(k.name for k in c.inference_services_affected_by_runtime(cluster)) == ["a", "b", "c"]


def test_keys_and_iteration() -> None:
    c = catalog(model(), runtime("rt"), isvc())
    assert len(c.keys()) == 3
    assert c.keys(Kind.CLUSTER_SERVING_RUNTIME) == [ObjectKey(Kind.CLUSTER_SERVING_RUNTIME, None, "rt")]
    assert ObjectKey(Kind.CLUSTER_BASE_MODEL, None, "m") in c
    assert {r.kind for r in c} == {
        Kind.CLUSTER_BASE_MODEL,
        Kind.CLUSTER_SERVING_RUNTIME,
        Kind.INFERENCE_SERVICE,
    }
    assert len(c.models()) == len(c.runtimes()) == len(c.inference_services()) == 1


# --- property: incremental updates equal a rebuild ----------------------------------------------------------

resources = st.one_of(
    st.builds(
        lambda name, ns, fmt: runtime(name, entry(fmt), namespace=ns),
        st.sampled_from("abc"),
        st.sampled_from([NS, None, "other"]),
        st.sampled_from(["x", "y"]),
    ),
    st.builds(
        lambda name, ns, fmt: model(name, fmt=fmt, namespace=ns),
        st.sampled_from("mn"),
        st.sampled_from([NS, None]),
        st.sampled_from(["x", "y"]),
    ),
    st.builds(
        lambda name, ns, target: isvc(name, namespace=ns, model_name=target),
        st.sampled_from("st"),
        st.sampled_from([NS, "other"]),
        st.sampled_from(["m", "n"]),
    ),
)


def _snapshot(c: Catalog) -> tuple[object, ...]:
    namespaces = [NS, "other", "none"]
    return (
        sorted(c.keys(), key=str),
        [[(p.runtime.key, p.range_text) for p in c.runtime_profiles_visible_from(ns)] for ns in namespaces],
        [[p.runtime.key for p in c.runtime_profiles_for_format(ns, f)] for ns in namespaces for f in "xy"],
        [c.resolve_model(ns, n) for ns in namespaces for n in "mn"],
        [
            c.inference_services_referencing_model(ObjectKey(kind, ns, n))
            for kind, ns in ((Kind.BASE_MODEL, NS), (Kind.CLUSTER_BASE_MODEL, None))
            for n in "mn"
        ],
        # All of them, in no particular order.
        sorted(c.inference_services_affected_by_runtime(ObjectKey(Kind.CLUSTER_SERVING_RUNTIME, None, "a"))),
    )


@settings(max_examples=150)
@given(st.lists(st.tuples(st.booleans(), resources), max_size=25))
def test_incremental_updates_equal_a_rebuild(operations: list[tuple[bool, Resource]]) -> None:
    incremental = Catalog()
    state: dict[ObjectKey, Resource] = {}
    for remove, resource in operations:
        if remove:
            incremental.remove(resource.key)
            state.pop(resource.key, None)
        else:
            incremental.upsert(resource)
            state[resource.key] = resource
    assert _snapshot(incremental) == _snapshot(Catalog.from_resources(state.values()))


def test_the_catalog_is_the_view_selection_reads() -> None:
    # Typed: mypy checks that Catalog satisfies the protocol the selection core declares.
    view: CatalogView = catalog(model(), runtime("rt", entry()), runtime("local", entry(), namespace=NS))
    assert view.runtime_counts(NS) == (1, 1)
    assert [p.name for p in view.runtime_profiles_visible_from(NS)] == ["local", "rt"]
    assert [p.name for p in view.runtime_profiles_for_format(NS, "onnx")] == []


# --- descendants (SPEC §5 v4) ------------------------------------------------------------------------------


def _keys(*names: str) -> set[ObjectKey]:
    """``ns/name`` for a ServingRuntime of that namespace, ``name`` for a ClusterServingRuntime."""
    keys = set()
    for name in names:
        namespace, _, bare = name.rpartition("/")
        kind = Kind.SERVING_RUNTIME if namespace else Kind.CLUSTER_SERVING_RUNTIME
        keys.add(ObjectKey(kind, namespace or None, bare))
    return keys


DESCENDANTS = catalog(
    runtime("base", entry()),
    runtime("mid", inherit_from="base"),
    runtime("leaf", inherit_from="mid"),
    runtime("team", namespace=NS, inherit_from="base"),  # a ServingRuntime below a cluster runtime
    runtime("team-leaf", namespace=NS, inherit_from="team"),
    runtime("team", namespace="other", inherit_from="base"),
    runtime("elsewhere", namespace="other", inherit_from="team"),  # other/team's child, not ns/team's
    runtime("c1", inherit_from="c2"),
    runtime("c2", inherit_from="c1"),  # a cycle
    runtime("local-base", namespace=NS),
    runtime("via-cluster", inherit_from="local-base"),  # a cluster runtime met from ns: stays in ns
    runtime("via-cluster-leaf", namespace=NS, inherit_from="via-cluster"),
    runtime("via-cluster-other", namespace="other", inherit_from="via-cluster"),
)


def test_descendants_of_a_cluster_runtime_reach_every_namespace_then_stay_in_it() -> None:
    found = DESCENDANTS.runtime_descendants(ObjectKey(Kind.CLUSTER_SERVING_RUNTIME, None, "base"))
    assert found == _keys("mid", "leaf", "ns/team", "ns/team-leaf", "other/team", "other/elsewhere")


def test_descendants_of_a_serving_runtime_stay_in_its_namespace() -> None:
    assert DESCENDANTS.runtime_descendants(ObjectKey(Kind.SERVING_RUNTIME, NS, "team")) == _keys(
        "ns/team-leaf"
    )
    found = DESCENDANTS.runtime_descendants(ObjectKey(Kind.SERVING_RUNTIME, NS, "local-base"))
    assert found == _keys("via-cluster", "ns/via-cluster-leaf")  # not other/via-cluster-other


def test_descendants_end_in_a_cycle_and_a_runtime_without_children_has_none() -> None:
    assert DESCENDANTS.runtime_descendants(ObjectKey(Kind.CLUSTER_SERVING_RUNTIME, None, "c1")) == _keys("c2")
    assert DESCENDANTS.runtime_descendants(ObjectKey(Kind.CLUSTER_SERVING_RUNTIME, None, "leaf")) == set()


def test_a_serving_runtime_change_reaches_the_inference_services_of_its_lineage() -> None:
    c = catalog(
        runtime("local-base", namespace=NS),
        runtime("via-cluster", inherit_from="local-base"),
        isvc("direct", runtime_name="local-base"),
        isvc("child", runtime_name="via-cluster", namespace="other"),  # names the cluster child elsewhere
        isvc("unrelated", namespace="other"),
    )
    key = ObjectKey(Kind.SERVING_RUNTIME, NS, "local-base")
    assert c.inference_services_naming_lineage(key) == {
        ObjectKey(Kind.INFERENCE_SERVICE, NS, "direct"),
        ObjectKey(Kind.INFERENCE_SERVICE, "other", "child"),
    }
    affected = set(c.inference_services_affected_by_runtime(key))
    assert ObjectKey(Kind.INFERENCE_SERVICE, "other", "child") in affected
    assert ObjectKey(Kind.INFERENCE_SERVICE, "other", "unrelated") not in affected


def test_the_descendant_index_follows_updates_and_removals() -> None:
    c = catalog(runtime("base"), runtime("child", inherit_from="base"))
    base = ObjectKey(Kind.CLUSTER_SERVING_RUNTIME, None, "base")
    assert c.runtime_descendants(base) == _keys("child")
    c.upsert(runtime("child", inherit_from="other"))
    assert c.runtime_descendants(base) == set()
    c.upsert(runtime("child", inherit_from="base"))
    c.remove(ObjectKey(Kind.CLUSTER_SERVING_RUNTIME, None, "child"))
    assert c.runtime_descendants(base) == set()
