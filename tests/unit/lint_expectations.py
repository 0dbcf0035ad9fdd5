"""What the lint tests expect, computed from SPEC §4 directly rather than through the engine."""

from __future__ import annotations

from fractions import Fraction

from ome_selector.api.resources import RuntimeSpec
from ome_selector.selection.explain import RuntimeVerdict
from ome_selector.selection.quantity import parse_parameter_count


def spec_distance(spec: RuntimeSpec, size: Fraction | None) -> tuple[bool, Fraction]:
    """SPEC §4 size distance (v4) as (infinite?, value): the sum of |bound - size| over the bounds that are
    present (a bound that reads as 0 is present, at 0); 0 without a size or without a range. Never infinite
    since v4 (the flag keeps the engine's key shape)."""
    size_range = spec.model_size_range
    if size is None or size_range is None:
        return (False, Fraction(0))
    bounds = [bound for bound in (size_range.min, size_range.max) if bound is not None]
    return (False, sum((abs(size - parse_parameter_count(bound)) for bound in bounds), Fraction(0)))


def ties(first: RuntimeVerdict, second: RuntimeVerdict, size: Fraction | None) -> bool:
    """Whether two ranked runtimes differ only by name (SPEC §11 RANK001)."""
    return (first.is_cluster, first.score, spec_distance(first.runtime.spec, size)) == (
        second.is_cluster,
        second.score,
        spec_distance(second.runtime.spec, size),
    )
