"""The token bucket in front of the webhook's confirming reads (SPEC §7: a negative answer is confirmed by a
direct read; whoever reaches the port must not turn requests into unthrottled API reads)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ome_selector.webhook.confirming import ConfirmationLimiter, ConfirmationsExhaustedError


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("at", "expected"),
    [
        # rate 2/s, burst 3, waits up to 1 s: three at once, then each half a second later, then refused.
        ([0, 0, 0, 0, 0, 0], [0.0, 0.0, 0.0, 0.5, 1.0, None]),
        # a pause refills the bucket, never above its burst
        ([0, 0, 0, 10, 10, 10, 10], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.5]),
        # a steady 2 per second never waits
        ([0, 0.5, 1.0, 1.5, 2.0, 2.5], [0.0] * 6),
        # a refused request takes no token
        ([0, 0, 0, 0, 0, 0, 0.5], [0.0, 0.0, 0.0, 0.5, 1.0, None, 1.0]),
    ],
    ids=["burst-then-wait-then-refuse", "refill-capped", "steady", "refusal-takes-nothing"],
)
def test_reservations_wait_in_order_and_refuse_past_the_longest_wait(
    at: list[float], expected: list[float | None]
) -> None:
    clock = Clock()
    limiter = ConfirmationLimiter(2.0, 3, max_wait=1.0, clock=clock)
    waits: list[float | None] = []
    refusals: list[str] = []
    for moment in at:
        clock.now = moment
        try:
            waits.append(round(limiter.reserve(), 6))
        except ConfirmationsExhaustedError as error:
            refusals.append(str(error))
            waits.append(None)
    assert waits == expected
    assert limiter.refused == expected.count(None)
    text = "ome-selector is confirming more than 2 denials per second; the request was not checked"
    assert refusals == [text] * expected.count(None)


@given(
    rate=st.floats(0.5, 50),
    burst=st.integers(1, 20),
    gaps=st.lists(st.floats(0, 0.5), min_size=1, max_size=200),
)
def test_no_window_sees_more_confirmations_than_burst_plus_rate_times_its_length(
    rate: float, burst: int, gaps: list[float]
) -> None:
    clock = Clock()
    limiter = ConfirmationLimiter(rate, burst, max_wait=1.0, clock=clock)
    starts: list[float] = []
    for gap in gaps:
        clock.now += gap
        try:
            starts.append(clock.now + limiter.reserve())
        except ConfirmationsExhaustedError:
            continue
    starts.sort()
    for first, begin in enumerate(starts):
        for last in range(first, len(starts)):
            assert last - first + 1 <= burst + rate * (starts[last] - begin) + 1e-6
