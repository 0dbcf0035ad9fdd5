"""Hypothesis strategies for catalogs that change: runtimes of three scopes whose entries match or miss a
model on format, architecture, version, size, accelerator classes and auto-select, and models whose metadata
comes and goes (used by the catalog's memo and index properties and by the confirming read's view)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from selection_builders import NS, entry, model, runtime

from ome_selector.api.resources import Model, Runtime

OTHER = "other"

entries = st.builds(
    lambda fmt, arch, version, operator, auto_select, priority: entry(
        fmt, arch=arch, version=version, operator=operator, auto_select=auto_select, priority=priority
    ),
    st.sampled_from(["safetensors", "onnx"]),
    st.sampled_from([None, "A", "B"]),
    st.sampled_from([None, "1.0", "2.0"]),
    st.sampled_from([None, "GreaterThanOrEqual"]),
    st.booleans(),
    st.integers(1, 3),
)


@st.composite
def _runtime(draw: st.DrawFn, names: str, min_entries: int) -> Runtime:
    size_range: dict[str, Any] = draw(
        st.sampled_from([{}, {"max": "1B"}, {"min": "2B"}, {"min": "1B", "max": "9B"}])
    )
    return runtime(
        draw(st.sampled_from(names)),
        *draw(st.lists(entries, min_size=min_entries, max_size=2)),
        namespace=draw(st.sampled_from([NS, OTHER, None])),
        disabled=draw(st.booleans()),
        classes=draw(st.sampled_from([None, ["a100"], ["a100", "h100"]])),
        **size_range,
    )


def runtimes(names: str = "abcd", *, min_entries: int = 0) -> st.SearchStrategy[Runtime]:
    """Runtimes named from ``names`` (one letter each), with ``min_entries`` to two format entries."""
    return _runtime(names, min_entries)


@st.composite
def _model(draw: st.DrawFn, names: str) -> Model:
    return model(
        draw(st.sampled_from(names)),
        fmt=draw(st.sampled_from(["safetensors", "onnx", None])),
        arch=draw(st.sampled_from([None, "A", "B"])),
        version=draw(st.sampled_from([None, "1.0", "2.0"])),
        size=draw(st.sampled_from([None, "3B", "500M"])),
        namespace=draw(st.sampled_from([NS, None])),
        disabled=draw(st.sampled_from([False, False, False, True])),
    )


def models(names: str = "mn") -> st.SearchStrategy[Model]:
    """Models named from ``names``, in the namespace or cluster-scoped, metadata set or not."""
    return _model(names)
