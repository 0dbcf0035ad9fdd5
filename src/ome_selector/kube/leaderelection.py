"""Leader election on a ``coordination.k8s.io/v1`` Lease, with client-go's semantics (SPEC §8).

Every replica serves the webhook; only the holder of the Lease writes conditions and records events. The rules
are client-go's ``tools/leaderelection``:

- A candidate takes the Lease when it is free (no holder, or released) or when the record it last
  *observed* has not changed for ``leaseDurationSeconds`` of its own monotonic clock. Remote timestamps are
  never compared with the local clock, so clock skew between nodes cannot make two leaders.
- The leader renews every ``retry_period``. Writes are fenced: :meth:`LeaderElector.may_write` is true only
  until ``renew_deadline`` after the *start* of the last successful renewal. Because ``renew_deadline`` is
  shorter than ``lease_duration``, a leader that cannot renew (partitioned, paused with SIGSTOP, starved)
  stops writing before any other replica may take the Lease. A renewal that lands after that deadline (the
  timeout fires only when a starved loop gets to it) opens the fence again and counts as a new start:
  ``on_started_leading`` runs again, since what was decided while the fence was closed was never written.
- Stopping a leader (SIGTERM) releases the Lease: holder cleared and a one-second duration, so a follower
  takes over at its next retry instead of after a full lease duration.

The decisions are pure functions of the observed record and the local clock (:func:`lease_is_free`); the loop
around them does the Lease reads and writes through :class:`LeaseStore`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import secrets
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Protocol

logger = logging.getLogger(__name__)

# client-go's JitterFactor: retries wait between retry_period and 1.2 × retry_period.
JITTER = 1.2


@dataclass(frozen=True, slots=True)
class LeaseTimings:
    """client-go's defaults for controllers: a 15 s lease, renewed within 10 s, tried every 2 s."""

    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        # The same guards as client-go's NewLeaderElector: the fence must end before the lease can expire.
        if not self.lease_duration > self.renew_deadline:
            raise ValueError("lease duration must be greater than the renew deadline")
        if not self.renew_deadline > JITTER * self.retry_period:
            raise ValueError(f"renew deadline must be greater than {JITTER} × the retry period")
        if self.retry_period <= 0:
            raise ValueError("retry period must be positive")


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    """The fields of a Lease that election reads; ``holder`` is ``""`` when nobody holds it."""

    holder: str
    duration_seconds: int
    transitions: int
    acquire_time: datetime | None
    renew_time: datetime | None
    resource_version: str | None = None

    def same_record(self, other: LeaseRecord | None) -> bool:
        """Whether nothing but the resourceVersion differs (client-go compares the raw record)."""
        return other is not None and replace(other, resource_version=None) == replace(
            self, resource_version=None
        )


def lease_is_free(record: LeaseRecord | None, identity: str, observed_at: float | None, now: float) -> bool:
    """Whether ``identity`` may take (or renew) the Lease, judged on the local monotonic clock.

    ``observed_at`` is when this replica last saw the record change; the holder's own timestamps are not used.
    """
    if record is None or not record.holder or record.holder == identity:
        return True
    if observed_at is None:
        return False
    return observed_at + record.duration_seconds <= now


def default_identity() -> str:
    """The pod name in a cluster; elsewhere ``<hostname>_<random>`` so two local processes never share one."""
    return os.environ.get("POD_NAME") or f"{socket.gethostname()}_{secrets.token_hex(4)}"


class LeaseStore(Protocol):
    """Reads and writes one Lease. ``create``/``update`` return False when another writer won the race."""

    async def get(self) -> LeaseRecord | None: ...

    async def create(self, record: LeaseRecord) -> LeaseRecord | None: ...

    async def update(self, record: LeaseRecord) -> LeaseRecord | None: ...


class LeaderElector:
    """Campaigns for one Lease until cancelled; releases it when cancelled while leading."""

    def __init__(
        self,
        store: LeaseStore,
        identity: str,
        timings: LeaseTimings = LeaseTimings(),
        *,
        on_started_leading: Callable[[], Awaitable[None] | None] | None = None,
        on_stopped_leading: Callable[[], Awaitable[None] | None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.identity = identity
        self.timings = timings
        self._store = store
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._clock = clock
        self._wall_clock = wall_clock
        self._observed: LeaseRecord | None = None
        self._observed_at: float | None = None
        self._renewed_at: float | None = None  # start of the last successful acquire or renew while leading
        self._leading = False
        self.transitions = 0  # times this replica became leader (for logs and tests)

    # --- the fence ---------------------------------------------------------------------------------

    def may_write(self) -> bool:
        """True only while this replica leads and its last renewal is younger than the renew deadline."""
        return (
            self._leading
            and self._renewed_at is not None
            and self._clock() - self._renewed_at < self.timings.renew_deadline
        )

    # --- the campaign ------------------------------------------------------------------------------

    async def run(self) -> None:
        """Acquire, lead while renewals succeed, and start over when leadership is lost."""
        try:
            while True:
                await self._acquire()
                await self._lead()
        finally:
            if self._leading:
                await asyncio.shield(self._release_and_stop())

    async def _acquire(self) -> None:
        while not await self._try_acquire_or_renew():
            await asyncio.sleep(self._jittered(self.timings.retry_period))
        logger.info("acquired the Lease as %s", self.identity)
        self.transitions += 1
        await self._set_leading(True)

    async def _lead(self) -> None:
        """Renew every retry period; give up once the renew deadline passes without a success."""
        while True:
            await asyncio.sleep(self.timings.retry_period)
            while True:
                assert self._renewed_at is not None
                remaining = self.timings.renew_deadline - (self._clock() - self._renewed_at)
                if remaining <= 0:
                    logger.warning(
                        "could not renew the Lease within %.0f s; stopping writes",
                        self.timings.renew_deadline,
                    )
                    await self._set_leading(False)
                    return
                previous = self._renewed_at
                try:
                    # asyncio.timeout, not wait_for: Python 3.11's wait_for returns the inner result when a
                    # cancellation arrives as that result does, and a cancelled elector would run on.
                    async with asyncio.timeout(remaining):
                        renewed = await self._try_acquire_or_renew()
                except TimeoutError:
                    renewed = False
                if renewed:
                    if self.may_write() and self._clock() - previous >= self.timings.renew_deadline:
                        await self._fence_reopened()
                    break
                if self._observed is not None and self._observed.holder not in ("", self.identity):
                    logger.warning("the Lease is held by %s now; stopping writes", self._observed.holder)
                    await self._set_leading(False)
                    return
                await asyncio.sleep(min(self.timings.retry_period, max(remaining, 0.0)))

    async def _fence_reopened(self) -> None:
        """A renewal landed after the renew deadline had passed (a paused or starved process: the timeout
        fires only when the loop gets to it). Writes were refused meanwhile while this replica still led, so
        whatever was decided then was never written: as for a new leader, everything is looked at again."""
        logger.warning("the Lease was renewed after the renew deadline had passed: writing again")
        if self._on_started is not None:
            result = self._on_started()
            if result is not None:
                await result

    async def _try_acquire_or_renew(self) -> bool:
        started = self._clock()
        try:
            current = await self._store.get()
        except Exception as error:  # the API may be unreachable for a while; the deadline decides
            logger.debug("reading the Lease failed: %s", error)
            return False
        self._observe(current, started)
        if not lease_is_free(current, self.identity, self._observed_at, self._clock()):
            return False
        now = self._wall_clock()
        keeps = current is not None and current.holder == self.identity
        desired = LeaseRecord(
            holder=self.identity,
            duration_seconds=round(self.timings.lease_duration),
            transitions=(current.transitions if current else 0) + (0 if keeps or current is None else 1),
            acquire_time=current.acquire_time if keeps and current else now,
            renew_time=now,
            resource_version=current.resource_version if current else None,
        )
        try:
            written = await (self._store.update(desired) if current else self._store.create(desired))
        except Exception as error:
            logger.debug("writing the Lease failed: %s", error)
            return False
        if written is None:
            return False
        self._observe(written, started)
        self._renewed_at = started
        return True

    def _observe(self, record: LeaseRecord | None, at: float) -> None:
        if record is None:
            self._observed, self._observed_at = None, None
        elif not record.same_record(self._observed):
            self._observed, self._observed_at = record, at
        else:
            self._observed = record  # newer resourceVersion, same record: the observation time stays

    async def _release_and_stop(self) -> None:
        """Stop writing first, then hand the Lease over (holder cleared, one-second duration)."""
        await self._set_leading(False)
        with contextlib.suppress(Exception):
            current = await self._store.get()
            if current is not None and current.holder == self.identity:
                now = self._wall_clock()
                released = replace(current, holder="", duration_seconds=1, acquire_time=now, renew_time=now)
                if await self._store.update(released) is not None:
                    logger.info("released the Lease")

    async def _set_leading(self, leading: bool) -> None:
        if leading == self._leading:
            return
        self._leading = leading
        if not leading:
            self._renewed_at = None
        callback = self._on_started if leading else self._on_stopped
        if callback is not None:
            result = callback()
            if result is not None:
                await result

    @staticmethod
    def _jittered(period: float) -> float:
        return period * (1 + random.random() * (JITTER - 1))  # jitter, not security


# --- the API side --------------------------------------------------------------------------------------


def _micro_time(value: datetime | None) -> str | None:
    return None if value is None else value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _record_of(lease: Any) -> LeaseRecord:
    spec = lease.spec
    return LeaseRecord(
        holder=spec.holder_identity or "",
        duration_seconds=int(spec.lease_duration_seconds or 0),
        transitions=int(spec.lease_transitions or 0),
        acquire_time=spec.acquire_time,
        renew_time=spec.renew_time,
        resource_version=lease.metadata.resource_version,
    )


class ApiLeaseStore:
    """One Lease through kubernetes_asyncio's CoordinationV1Api; writes are guarded by resourceVersion."""

    def __init__(self, api_client: Any, namespace: str, name: str) -> None:
        from kubernetes_asyncio import client  # noqa: PLC0415 - the module stays importable without a client

        self._api = client.CoordinationV1Api(api_client)
        self._exception: type[Exception] = client.ApiException
        self.namespace = namespace
        self.name = name

    def _body(self, record: LeaseRecord) -> dict[str, Any]:
        metadata: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
        if record.resource_version is not None:
            metadata["resourceVersion"] = record.resource_version
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": metadata,
            "spec": {
                "holderIdentity": record.holder or None,
                "leaseDurationSeconds": record.duration_seconds,
                "leaseTransitions": record.transitions,
                "acquireTime": _micro_time(record.acquire_time),
                "renewTime": _micro_time(record.renew_time),
            },
        }

    async def get(self) -> LeaseRecord | None:
        from ome_selector.kube.objects import read_or_absent  # noqa: PLC0415 - as the client, above

        lease = await read_or_absent(self._api.read_namespaced_lease(self.name, self.namespace))
        return _record_of(lease) if lease is not None else None

    async def create(self, record: LeaseRecord) -> LeaseRecord | None:
        try:
            lease = await self._api.create_namespaced_lease(
                self.namespace,
                self._body(record),  # type: ignore[arg-type]  # the client serialises plain dicts too
            )
        except self._exception as error:
            if getattr(error, "status", None) == 409:
                return None
            raise
        return _record_of(lease)

    async def update(self, record: LeaseRecord) -> LeaseRecord | None:
        try:
            lease = await self._api.replace_namespaced_lease(
                self.name,
                self.namespace,
                self._body(record),  # type: ignore[arg-type]  # the client serialises plain dicts too
            )
        except self._exception as error:
            if getattr(error, "status", None) in (404, 409):
                return None
            raise
        return _record_of(lease)
