"""What the lint tests expect, computed from SPEC §4 directly rather than through the engine."""

from __future__ import annotations

from fractions import Fraction

from ome_selector.api.resources import RuntimeSpec
from ome_selector.selection.explain import RuntimeVerdict
from ome_selector.selection.quantity import parse_parameter_count


def spec_distance(spec: RuntimeSpec, size: Fraction | None) -> tuple[bool, Fraction]:
    """SPEC §4 size distance as (infinite?, value): 0 without a size or without a range, infinite with one
    bound missing, else |size - min| + |max - size|."""
    size_range = spec.model_size_range
    if size is None or size_range is None or (size_range.min is None and size_range.max is None):
        return (False, Fraction(0))
    if size_range.min is None or size_range.max is None:
        return (True, Fraction(0))
    low, high = parse_parameter_count(size_range.min), parse_parameter_count(size_range.max)
    return (False, abs(size - low) + abs(high - size))


def ties(first: RuntimeVerdict, second: RuntimeVerdict, size: Fraction | None) -> bool:
    """Whether two ranked runtimes differ only by name (SPEC §11 RANK001)."""
    return (first.is_cluster, first.score, spec_distance(first.runtime.spec, size)) == (
        second.is_cluster,
        second.score,
        spec_distance(second.runtime.spec, size),
    )
