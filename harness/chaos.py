"""Seeded fault injection: the operator's memory equals the cluster, under any fault (SPEC §5, §7, §8).

``python -m harness.chaos --seed N --steps K`` (``make chaos SEED=N STEPS=K``) starts a local control plane
and two replicas of ``ome-selector run`` (leader election, a webhook each), then plays a random schedule,
drawn from the seed alone, of catalog and InferenceService operations (creates, size changes, range and
priority edits, inheritance edits, deletes, names reused after deletion, bursts of runtimes) interleaved with
faults:

- ``pause-across-compaction``: a replica is stopped (SIGSTOP) while kube-apiserver restarts, an operation
  lands and etcd is compacted past every watch's resourceVersion; then it resumes (its watches get 410 Gone);
- ``restart-apiserver`` and ``restart-etcd``;
- ``kill-replica``: SIGKILL, then the same replica started again;
- ``leader-change``: the Lease holder stopped (SIGTERM, it hands the Lease over) and started again;
- ``saturate``: both cores kept busy by other processes for the next steps;
- ``cut-connections`` and ``slow-connections``: the replicas reach the apiserver through a loopback TCP proxy
  (:mod:`harness.tcpproxy`) that closes every connection at once, or delays every chunk for a while.
- ``crd-recreate``: the CRD of one kind the schedule uses (ClusterBaseModel, ClusterServingRuntime or
  InferenceService) is deleted — with every object of it — long enough for the replicas' watches of it to end,
  then created again, and the objects the schedule had of that kind are created again under the same names
  (new objects: new uids), as an upgrade that replaces a CRD does (SPEC §5 "Watch streams that end"); so every
  later step acts on what exists, and every invariant checks the recreated objects, of which a replica whose
  watch stayed ended would know nothing.

After every ``--check-every`` steps (and at the end) it waits for the cluster to settle and checks the
invariants against a fresh listing evaluated offline by the product's own pure core (as ``kubectl ome-selector
runtime explain -f`` evaluates files):

1. every InferenceService's ``RuntimeReady`` equals its verdict (status, reason, message), within
   ``CONVERGE_SECONDS`` of the last step;
2. each replica's webhook answers a probe InferenceService per model (and one of a missing model) as the
   verdict says (SPEC §7: denied with the §5 message when the verdict is False, else allowed);
3. no condition change recorded two events: kube-apiserver's audit log of status writes counts every change
   of each condition, and the events recorded between two checks are at most as many (one of the state, one
   switch event);
4. nothing is written when nothing changed (no InferenceService and no event changes for ``QUIET_SECONDS``).

A failure prints the seed, the schedule and the replay command, and the exit status is 1. The schedule is a
pure function of the seed and the number of steps (:func:`schedule`); the timing of each fault is not, so a
replay plays the same schedule, not the same interleaving.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from harness import objects
from harness.controlplane import ControlPlane, free_port, running_control_plane
from harness.crds import crd_documents, install_crds
from harness.hostile import WebhookClient, path_of, review, webhook_address
from harness.kube import api_client_for, create, delete, list_objects, patch
from harness.tcpproxy import TcpProxy
from ome_selector.api.resources import InferenceService, Kind, ObjectKey
from ome_selector.cli.sources import RawObject, load_catalog
from ome_selector.selection.inheritance import RuntimeLookup
from ome_selector.selection.outcome import evaluate

NAMESPACE = "chaos"
PLURAL = Kind.INFERENCE_SERVICE.plural
SWITCH_EVENT = "RuntimeSelectionChanged"
CONFLICT_EVENT = "RuntimeReadyConflict"
MODELS = ("m0", "m1", "m2", "m3")
RUNTIMES = ("rt0", "rt1", "rt2", "rt3")
SERVICES = tuple(f"s{i}" for i in range(8))
SIZES: tuple[str | None, ...] = (None, "500M", "1B", "3.21B", "7B", "13B", "70B")
RANGES: tuple[tuple[str | None, str | None], ...] = (
    (None, None),
    ("1B", "10B"),
    ("5B", "100B"),
    (None, "2B"),
    ("10B", None),
    ("500M", "8B"),
)
BURST = 12
REPLICAS = 2
#: Lease timings of the replicas (hidden flags): short, so that a leader change fits the convergence budget.
LEASE = ("--leader-election-lease-duration", "4", "--leader-election-renew-deadline", "3")
RETRY = ("--leader-election-retry-period", "0.5")
#: Every invariant holds this long after the last step, at the latest (SPEC §5: a relist within seconds).
CONVERGE_SECONDS = 10.0
#: A settled cluster writes nothing for this long.
QUIET_SECONDS = 3.0
#: How long ``crd-recreate`` leaves a CRD deleted: the replicas' watches reconnect (and meet 404) within it.
CRD_ABSENT_SECONDS = 2.0

OPERATIONS = (
    "create-model",
    "size-model",
    "delete-model",
    "create-runtime",
    "edit-runtime",
    "inherit-runtime",
    "delete-runtime",
    "create-isvc",
    "delete-isvc",
    "burst",
)
FAULTS = (
    "pause-across-compaction",
    "restart-apiserver",
    "restart-etcd",
    "kill-replica",
    "leader-change",
    "saturate",
    "cut-connections",
    "slow-connections",
    "crd-recreate",
)
#: The kinds whose CRD ``crd-recreate`` deletes and creates again (those the schedule makes objects of).
RECREATED_KINDS = (Kind.CLUSTER_BASE_MODEL, Kind.CLUSTER_SERVING_RUNTIME, Kind.INFERENCE_SERVICE)


@dataclass(frozen=True)
class Step:
    """One step of a schedule: an operation or a fault, with its arguments (JSON-able)."""

    action: str
    args: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        return f"{self.action} {json.dumps(self.args, sort_keys=True)}"


@dataclass
class _World:
    """What the schedule has made so far: the generator draws only operations that make sense."""

    models: dict[str, str | None] = field(default_factory=dict)  # name → size
    runtimes: set[str] = field(default_factory=set)
    services: dict[str, str] = field(default_factory=dict)  # name → model
    bursts: int = 0


def schedule(seed: int, steps: int, *, fault_share: float = 0.3) -> list[Step]:
    """The schedule of ``seed``: ``steps`` steps, about ``fault_share`` of them faults (a pure function)."""
    rng = random.Random(seed)
    world = _World()
    plan: list[Step] = []
    for _ in range(steps):
        if plan and rng.random() < fault_share:
            plan.append(_fault(rng, world))
        else:
            plan.append(_operation(rng, world))
    return plan


def _operation(rng: random.Random, world: _World, *, actions: Sequence[str] = OPERATIONS) -> Step:
    while True:
        action = rng.choice(actions)
        step = _draw(rng, world, action)
        if step is not None:
            return step


def _draw(rng: random.Random, world: _World, action: str) -> Step | None:
    absent_models = [m for m in MODELS if m not in world.models]
    if action == "create-model" and absent_models:
        name, size = rng.choice(absent_models), rng.choice(SIZES)
        world.models[name] = size
        return Step(action, {"name": name, "size": size})
    if action == "size-model" and world.models:
        name, size = rng.choice(sorted(world.models)), rng.choice([s for s in SIZES if s is not None])
        world.models[name] = size
        return Step(action, {"name": name, "size": size})
    if action == "delete-model" and world.models:
        name = rng.choice(sorted(world.models))
        del world.models[name]
        return Step(action, {"name": name})
    absent_runtimes = [r for r in RUNTIMES if r not in world.runtimes]
    if action == "create-runtime" and absent_runtimes:
        name = rng.choice(absent_runtimes)
        world.runtimes.add(name)
        low, high = rng.choice(RANGES)
        return Step(action, {"name": name, "min": low, "max": high, "priority": rng.randint(1, 3)})
    if action == "edit-runtime" and world.runtimes:
        low, high = rng.choice(RANGES)
        name = rng.choice(sorted(world.runtimes))
        return Step(action, {"name": name, "min": low, "max": high, "priority": rng.randint(1, 3)})
    if action == "inherit-runtime" and world.runtimes:
        name = rng.choice(sorted(world.runtimes))
        parent = rng.choice(["", *RUNTIMES])  # a missing parent breaks the chain (SPEC §1)
        return Step(action, {"name": name, "parent": parent})
    if action == "delete-runtime" and world.runtimes:
        name = rng.choice(sorted(world.runtimes))
        world.runtimes.discard(name)
        return Step(action, {"name": name})
    absent_services = [s for s in SERVICES if s not in world.services]
    if action == "create-isvc" and absent_services:
        name, model = rng.choice(absent_services), rng.choice(MODELS)  # the model may not exist (yet)
        runtime = rng.choice([None, None, *RUNTIMES])
        world.services[name] = model
        return Step(action, {"name": name, "model": model, "runtime": runtime})
    if action == "delete-isvc" and world.services:
        name = rng.choice(sorted(world.services))
        del world.services[name]
        return Step(action, {"name": name})
    if action == "burst":
        world.bursts += 1
        ranges = [rng.choice(RANGES) for _ in range(BURST)]
        return Step(action, {"count": BURST, "ranges": ranges, "delete": world.bursts % 2 == 0})
    return None


def _fault(rng: random.Random, world: _World) -> Step:
    action = rng.choice(FAULTS)
    if action == "pause-across-compaction":
        # The operation that lands while the replica is stopped: a deletion is what a relist cannot see.
        during = _operation(
            rng, world, actions=("delete-model", "delete-runtime", "size-model", "create-model")
        )
        return Step(action, {"replica": rng.choice(["leader", "follower"]), "during": asdict(during)})
    if action == "kill-replica":
        return Step(action, {"replica": rng.choice(["leader", "follower"])})
    if action == "saturate":
        return Step(action, {"seconds": rng.choice([10, 20, 30])})
    if action == "slow-connections":
        return Step(action, {"delay": rng.choice([0.1, 0.5, 1.0]), "seconds": rng.choice([5, 10, 20])})
    if action == "crd-recreate":
        return _crd_recreate(rng, world)
    return Step(action)


def _crd_recreate(rng: random.Random, world: _World) -> Step:
    """Deleting a CRD deletes every object of its kind; the step creates the same names again, as new objects
    (models with their sizes, runtimes and InferenceServices with their models; ranges, priorities and named
    runtimes drawn afresh, inheritance gone), so the world holds the same names after it."""
    kind = rng.choice(RECREATED_KINDS)
    recreated: list[Step] = []
    if kind is Kind.CLUSTER_BASE_MODEL:
        recreated = [
            Step("create-model", {"name": n, "size": size}) for n, size in sorted(world.models.items())
        ]
    elif kind is Kind.CLUSTER_SERVING_RUNTIME:
        for name in sorted(world.runtimes):
            low, high = rng.choice(RANGES)
            args = {"name": name, "min": low, "max": high, "priority": rng.randint(1, 3)}
            recreated.append(Step("create-runtime", args))
    else:
        for name, model in sorted(world.services.items()):
            args = {"name": name, "model": model, "runtime": rng.choice([None, None, *RUNTIMES])}
            recreated.append(Step("create-isvc", args))
    return Step("crd-recreate", {"kind": kind.value, "recreate": [asdict(step) for step in recreated]})


# --- running a schedule ------------------------------------------------------------------------------------


class InvariantError(AssertionError):
    """An invariant did not hold."""


def _burn(until: float) -> None:
    while time.time() < until:
        pass


@dataclass
class Replica:
    """One ``ome-selector run`` process: leader election and a webhook of its own (``--instance``)."""

    plane: ControlPlane
    name: str
    kubeconfig: Path
    process: subprocess.Popen[bytes] | None = None
    health_port: int = 0

    def start(self) -> None:
        self.health_port = free_port()
        argv = [
            sys.executable, "-m", "ome_selector.cli.ome_selector", "--kubeconfig", str(self.kubeconfig),
            "run", "--health-bind-address", f"127.0.0.1:{self.health_port}", "--log-format", "json",
            "--resync-seconds", "3600", "--leader-election", "--leader-election-namespace", "default",
            *LEASE, *RETRY, "--webhook-bind-address", "127.0.0.1:0", "--instance", self.name,
            "--webhook-failure-policy", "Ignore", "--webhook-timeout-seconds", "2",
        ]  # fmt: skip
        env = dict(os.environ, POD_NAME=self.name)  # the Lease holder's identity
        with (self.plane.workdir / f"{self.name}.log").open("ab") as sink:
            self.process = subprocess.Popen(
                argv, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env
            )
        deadline = time.monotonic() + 120
        while not _ready(self.health_port):  # indexed, and its webhook registered at its new port
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"replica {self.name} did not start:\n{self.log_tail()}")
            time.sleep(0.1)

    def send(self, number: int) -> None:
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, number)

    def stop(self, number: int = signal.SIGTERM) -> None:
        if self.process is None:
            return
        self.send(number)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None

    def log_tail(self, size: int = 4000) -> str:
        path = self.plane.workdir / f"{self.name}.log"
        return path.read_text(errors="replace")[-size:] if path.exists() else ""


@dataclass
class Report:
    seed: int
    plan: list[Step]
    checks: int = 0
    faults: int = 0
    operations: int = 0
    converge_seconds: list[float] = field(default_factory=list)
    # Of each convergence, the seconds until the cluster could be read again (the control plane's own return
    # after a restart, not the operator's doing).
    unreadable_seconds: list[float] = field(default_factory=list)
    event_checks_skipped: int = 0  # intervals in which a stored status write was missing from the audit log

    def summary(self) -> dict[str, Any]:
        times = sorted(self.converge_seconds)
        return {
            "seed": self.seed,
            "steps": len(self.plan),
            "operations": self.operations,
            "faults": self.faults,
            "invariant_checks": self.checks,
            "event_checks_skipped": self.event_checks_skipped,
            "converge_max_s": round(times[-1], 2) if times else None,
            "converge_median_s": round(times[len(times) // 2], 2) if times else None,
            "unreadable_max_s": round(max(self.unreadable_seconds), 2) if self.unreadable_seconds else None,
        }


#: A condition as the event check compares it: (status, reason, message), or None where there is none.
ConditionState = tuple[Any, Any, Any] | None


def _condition_state(body: dict[str, Any]) -> ConditionState:
    condition = _runtime_ready(body)
    return (condition["status"], condition["reason"], condition["message"]) if condition else None


class ConditionAudit:
    """Counts every change of each InferenceService's RuntimeReady (by uid) from kube-apiserver's audit log of
    status writes, which holds each write with the object it stored and is written before the write is
    answered, across apiserver and etcd restarts alike: no gap hides a change, as it would from a watch. Only
    a write stored by an apiserver killed before it logged it, or answered 504 and stored all the same, can be
    missing; then the last logged state of some InferenceService differs from the cluster's, that interval is
    not held to the event count, and the cluster's state is adopted for the next."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._offset = 0
        self._states: dict[str, tuple[int, ConditionState]] = {}  # uid: (resourceVersion, state) last logged
        self.changes: Counter[str] = Counter()

    def read(self) -> None:
        """Take in the writes logged since the last read (whole lines only), in the order they were stored."""
        try:
            with self._path.open("rb") as log:
                log.seek(self._offset)
                data = log.read()
        except FileNotFoundError:
            return
        end = data.rfind(b"\n") + 1
        self._offset += end
        writes: list[tuple[int, str, ConditionState]] = []
        for line in data[:end].splitlines():
            entry = json.loads(line)
            stored = entry.get("responseObject")
            code = (entry.get("responseStatus") or {}).get("code", 0)
            if (
                not isinstance(stored, dict)
                or stored.get("kind") != "InferenceService"
                or not 200 <= code < 300
            ):
                continue
            metadata = stored["metadata"]
            writes.append((int(metadata["resourceVersion"]), metadata["uid"], _condition_state(stored)))
        for version, uid, state in sorted(writes):
            self.take(uid, version, state)

    def state(self, uid: str) -> ConditionState:
        """The state the last logged write of ``uid`` stored (None: no write logged)."""
        return self._states.get(uid, (0, None))[1]

    def take(self, uid: str, version: int, state: ConditionState) -> None:
        """A state of ``uid`` stored at ``version``, counted as a change when it differs from the last one
        taken (an older version is ignored): from the log, or from the cluster where the log misses a stored
        write (a write answered 504 and stored all the same, or one stored by an apiserver killed before it
        logged it), so that the later intervals are held to the event count again."""
        before = self._states.get(uid, (0, None))
        if version <= before[0]:
            return
        if state != before[1]:
            self.changes[uid] += 1
        self._states[uid] = (version, state)


class Chaos:
    """Plays a schedule on a control plane with two replicas and checks the invariants."""

    def __init__(self, plane: ControlPlane, api: Any, report: Report, *, log: Callable[[str], None]) -> None:
        self.plane, self.api, self.report, self.log = plane, api, report, log
        # The replicas reach the apiserver through a proxy the network faults act on.
        self.proxy = TcpProxy(plane.api_port)
        kubeconfig = plane.workdir / "kubeconfig-proxied"
        kubeconfig.write_text(
            plane.kubeconfig.read_text().replace(plane.server, f"https://127.0.0.1:{self.proxy.port}")
        )
        self.replicas = [Replica(plane, f"replica-{i}", kubeconfig) for i in range(REPLICAS)]
        self._burners: list[multiprocessing.Process] = []
        self._faults_end = 0.0  # when the timed faults (slow connections, saturated cores) are over
        assert plane.audit_log is not None, "the event check reads the apiserver's audit log"
        self.conditions = ConditionAudit(plane.audit_log)
        self._accounted: tuple[Counter[str], set[str]] = (Counter(), set())
        self._event_subjects: dict[str, str] = {}  # event name: the uid of the InferenceService it is about

    # --- the cluster ------------------------------------------------------------------------------------

    def start(self) -> None:
        core: Any = client.CoreV1Api(self.api)  # dict bodies: the typed models would only re-encode them
        core.create_namespace({"metadata": {"name": NAMESPACE}})
        for replica in self.replicas:
            replica.start()

    def stop(self) -> None:
        for burner in self._burners:
            burner.terminate()
            burner.join()
        for replica in self.replicas:
            replica.stop()
        self.proxy.close()

    def leader(self) -> Replica | None:
        try:
            lease = client.CoordinationV1Api(self.api).read_namespaced_lease("ome-selector", "default")
        except ApiException:
            return None
        holder = lease.spec.holder_identity if lease.spec is not None else None
        return next((r for r in self.replicas if r.name == holder), None)

    def _replica(self, which: str) -> Replica:
        leader = self.leader() or self.replicas[0]
        return leader if which == "leader" else next(r for r in self.replicas if r is not leader)

    # --- steps ------------------------------------------------------------------------------------------

    def play(self, step: Step) -> None:
        if step.action in FAULTS:
            self.report.faults += 1
            self._fault(step)
        else:
            self.report.operations += 1
            self._operation(step)

    def _operation(self, step: Step) -> None:
        a = step.args
        if step.action == "create-model":
            _retrying(lambda: create(self.api, objects.model(a["name"], size=a["size"])))
        elif step.action == "size-model":
            body = {"spec": {"modelParameterSize": a["size"]}}
            _retrying(lambda: patch(self.api, "ClusterBaseModel", a["name"], body))
        elif step.action == "delete-model":
            _retrying(lambda: delete(self.api, "ClusterBaseModel", a["name"]))
        elif step.action == "create-runtime":
            body = objects.runtime(a["name"], size_range=(a["min"], a["max"]), priority=a["priority"])
            _retrying(lambda: create(self.api, body))
        elif step.action == "edit-runtime":
            entry = objects.runtime(a["name"], priority=a["priority"])["spec"]["supportedModelFormats"]
            size_range = {k: v for k, v in (("min", a["min"]), ("max", a["max"])) if v is not None}
            body = {"spec": {"supportedModelFormats": entry, "modelSizeRange": size_range or None}}
            _retrying(lambda: patch(self.api, "ClusterServingRuntime", a["name"], body))
        elif step.action == "inherit-runtime":
            body = {"metadata": {"annotations": {"ome.io/inherit-from": a["parent"] or None}}}
            _retrying(lambda: patch(self.api, "ClusterServingRuntime", a["name"], body))
        elif step.action == "delete-runtime":
            _retrying(lambda: delete(self.api, "ClusterServingRuntime", a["name"]))
        elif step.action == "create-isvc":
            body = objects.inference_service(
                a["name"], namespace=NAMESPACE, model_name=a["model"], runtime_name=a["runtime"]
            )
            _retrying(lambda: create(self.api, body))
        elif step.action == "delete-isvc":
            _retrying(lambda: delete(self.api, "InferenceService", a["name"], NAMESPACE))
        elif step.action == "burst":
            names = [f"burst-{i}" for i in range(a["count"])]
            for name, (low, high) in zip(names, a["ranges"], strict=True):
                with contextlib.suppress(ApiException):  # the previous burst's may still be there
                    create(self.api, objects.runtime(name, size_range=(low, high)))
            if a["delete"]:
                for name in names:
                    _retrying(lambda n=name: delete(self.api, "ClusterServingRuntime", n))  # type: ignore[misc]
        else:
            raise ValueError(f"unknown operation {step.action}")

    def _fault(self, step: Step) -> None:
        a = step.args
        if step.action == "pause-across-compaction":
            replica = self._replica(a["replica"])
            replica.send(signal.SIGSTOP)
            try:
                self.plane.restart_apiserver()
                self._operation(Step(a["during"]["action"], a["during"]["args"]))
                self.plane.etcd_compact()
            finally:
                replica.send(signal.SIGCONT)
        elif step.action == "restart-apiserver":
            self.plane.restart_apiserver()
        elif step.action == "restart-etcd":
            self.plane.restart_etcd()
        elif step.action == "kill-replica":
            replica = self._replica(a["replica"])
            replica.stop(signal.SIGKILL)
            replica.start()
        elif step.action == "leader-change":
            replica = self._replica("leader")
            replica.stop(signal.SIGTERM)
            replica.start()
        elif step.action == "saturate":
            until = time.time() + a["seconds"]
            self._faults_end = max(self._faults_end, time.monotonic() + a["seconds"])
            for _ in range(os.cpu_count() or 2):
                burner = multiprocessing.Process(target=_burn, args=(until,), daemon=True)
                burner.start()
                self._burners.append(burner)
        elif step.action == "cut-connections":
            self.proxy.cut()
        elif step.action == "slow-connections":
            self.proxy.slow(a["delay"], a["seconds"])
            self._faults_end = max(self._faults_end, time.monotonic() + a["seconds"])
        elif step.action == "crd-recreate":
            self._recreate_crd(Kind(a["kind"]))
            for created in a["recreate"]:
                self._operation(Step(created["action"], created["args"]))
        else:
            raise ValueError(f"unknown fault {step.action}")

    def _recreate_crd(self, kind: Kind) -> None:
        """Delete the CRD of ``kind`` (and so every object of it), leave it away for CRD_ABSENT_SECONDS (every
        watch of it reconnects and meets 404 meanwhile), and create it again."""
        name = f"{kind.plural}.ome.io"
        (document,) = [doc for doc in crd_documents() if doc["metadata"]["name"] == name]
        self.plane.kubectl("delete", "crd", name, "--wait=true", "--timeout=120s")
        time.sleep(CRD_ABSENT_SECONDS)
        install_crds(self.plane.kubeconfig, [document])

    # --- invariants -------------------------------------------------------------------------------------

    def check(self) -> float:
        """Wait until the invariants hold, at most CONVERGE_SECONDS after the last step or after the end of
        the timed faults still under way, then that nothing is written; returns the seconds it took to
        converge from then. Raises :class:`InvariantError` otherwise."""
        self.report.checks += 1
        began = max(time.monotonic(), self._faults_end)
        readable: float | None = None
        problems: list[str] = []
        while True:
            try:
                problems = self._conditions()
                readable = readable or time.monotonic()
                problems += self._webhooks()
            except (ApiException, OSError) as error:  # the API may still be settling after a restart
                problems = [f"could not read the cluster or a webhook: {error}"]
            if not problems:
                break
            if time.monotonic() - began > CONVERGE_SECONDS:  # began is ahead while a fault lasts
                raise InvariantError(
                    f"not converged within {CONVERGE_SECONDS:.0f} s:\n  " + "\n  ".join(problems[:20])
                )
            time.sleep(0.25)
        converged = max(0.0, time.monotonic() - began)
        self.report.converge_seconds.append(converged)
        self.report.unreadable_seconds.append(max(0.0, (readable or began) - began))
        if converged > CONVERGE_SECONDS / 2:  # where the time went
            self.log(f"  the cluster could be read again after {self.report.unreadable_seconds[-1]:.1f} s")
        before = self._written()
        time.sleep(QUIET_SECONDS)
        after = self._written()
        changed = sorted(k for k in after.keys() | before.keys() if after.get(k) != before.get(k))
        written = self._written_in_quiet(changed)
        if written:
            raise InvariantError("written while nothing changed:\n  " + "\n  ".join(written[:10]))
        duplicates = self._events_per_change()
        if duplicates:
            raise InvariantError("a condition change recorded two events:\n  " + "\n  ".join(duplicates[:10]))
        return converged

    def _listing(self) -> list[dict[str, Any]]:
        bodies: list[dict[str, Any]] = []
        for kind in ("ClusterBaseModel", "BaseModel", "ClusterServingRuntime", "ServingRuntime"):
            bodies.extend(list_objects(self.api, kind))
        bodies.extend(list_objects(self.api, "InferenceService", NAMESPACE))
        return bodies

    def _conditions(self) -> list[str]:
        bodies = self._listing()
        catalog = load_catalog((RawObject(b, "cluster", from_file=False) for b in bodies), NAMESPACE)
        problems: list[str] = []
        for body in bodies:
            if body["kind"] != "InferenceService":
                continue
            name = body["metadata"]["name"]
            isvc = catalog.get(ObjectKey(Kind.INFERENCE_SERVICE, NAMESPACE, name))
            outcome = (
                evaluate(catalog, isvc, RuntimeLookup.V1_3) if isinstance(isvc, InferenceService) else None
            )
            stored = _runtime_ready(body)
            want = (outcome.status, outcome.reason, outcome.message) if outcome is not None else None
            have = (stored["status"], stored["reason"], stored["message"]) if stored is not None else None
            if want != have:
                problems.append(f"{name}: condition {have} but the verdict is {want}")
        return problems

    def _webhooks(self) -> list[str]:
        bodies = self._listing()
        catalog = load_catalog((RawObject(b, "cluster", from_file=False) for b in bodies), NAMESPACE)
        problems: list[str] = []
        admission: Any = client.AdmissionregistrationV1Api(self.api)
        for replica in self.replicas:
            configuration = admission.read_validating_webhook_configuration(
                f"ome-selector-local-{replica.name}"
            )
            hook = WebhookClient(*webhook_address(configuration))
            try:
                for model in (*MODELS, "missing"):
                    probe = objects.inference_service(
                        f"probe-{model}", namespace=NAMESPACE, model_name=model, engine={"minReplicas": 1}
                    )
                    request = review(Kind.INFERENCE_SERVICE, obj=json.loads(json.dumps(probe)))
                    request["request"]["namespace"] = NAMESPACE
                    status, answer = hook.post(path_of(Kind.INFERENCE_SERVICE), json.dumps(request).encode())
                    response = json.loads(answer)["response"] if status == 200 else {}
                    allowed = response.get("allowed")
                    loaded = load_catalog([RawObject(probe, "probe", from_file=False)], NAMESPACE)
                    isvc = loaded.get(ObjectKey(Kind.INFERENCE_SERVICE, NAMESPACE, f"probe-{model}"))
                    assert isinstance(isvc, InferenceService)
                    outcome = evaluate(catalog, isvc, RuntimeLookup.V1_3)
                    denied = outcome is not None and outcome.status == "False"
                    if status != 200 or allowed is denied:
                        problems.append(
                            f"{replica.name}'s webhook {'allows' if allowed else 'denies'} a probe of model"
                            f" {model} (HTTP {status}) but the verdict is {outcome and outcome.reason}"
                        )
                    elif denied and outcome is not None and response["status"]["message"] != outcome.message:
                        problems.append(
                            f"{replica.name} denies model {model}: {response['status']['message']}"
                        )
            finally:
                hook.close()
        return problems

    def _written(self) -> dict[str, str]:
        versions = {
            f"isvc/{b['metadata']['name']}": b["metadata"]["resourceVersion"]
            for b in list_objects(self.api, "InferenceService", NAMESPACE)
        }
        core: Any = client.CoreV1Api(self.api)
        for event in core.list_namespaced_event(NAMESPACE).items:
            versions[f"event/{event.metadata.name}"] = event.metadata.resource_version
            self._event_subjects[event.metadata.name] = event.involved_object.uid or ""
        return versions

    def _written_in_quiet(self, changed: list[str]) -> list[str]:
        """Of the objects that changed in the quiet period, those that count as written while nothing changed:
        any InferenceService, and an event about one whose condition did not change since the last check. An
        event of a change made before the quiet, recorded only in it (the replica's loop starved by the
        saturated cores), is the tail of that change: the event count holds it to one."""
        self.conditions.read()
        changes_before = self._accounted[0]
        written: list[str] = []
        for key in changed:
            kind, _, name = key.partition("/")
            subject = self._event_subjects.get(name, "") if kind == "event" else ""
            if subject and self.conditions.changes[subject] > changes_before[subject]:
                self.log(f"  {key}: recorded in the quiet, for a change before it")
            else:
                written.append(key)
        return written

    def _events_per_change(self) -> list[str]:
        """Each change of a condition recorded at most one event of its state and one switch event (SPEC §5,
        §12): for the changes and events since the last check, unless a write is missing from the log."""
        self.conditions.read()
        changes, (changes_before, recorded) = Counter(self.conditions.changes), self._accounted
        events: dict[str, Counter[str]] = {}
        names: set[str] = set()
        core: Any = client.CoreV1Api(self.api)
        for event in core.list_namespaced_event(NAMESPACE).items:
            names.add(event.metadata.name)
            uid = event.involved_object.uid
            if event.metadata.name in recorded or event.involved_object.kind != "InferenceService" or not uid:
                continue
            if (event.count or 1) > 1:
                return [f"{event.involved_object.name}: {event.reason} counted {event.count} times"]
            kind = event.reason if event.reason in (SWITCH_EVENT, CONFLICT_EVENT) else "state"
            events.setdefault(uid, Counter())[kind] += 1
        self._accounted = (changes, names)
        listed = list_objects(self.api, "InferenceService", NAMESPACE)
        missing = [b for b in listed if self.conditions.state(b["metadata"]["uid"]) != _condition_state(b)]
        if missing:
            self.report.event_checks_skipped += 1  # a stored write the log does not hold
            for body in missing:
                metadata = body["metadata"]
                self.conditions.take(
                    metadata["uid"], int(metadata["resourceVersion"]), _condition_state(body)
                )
            return []
        problems: list[str] = []
        for uid, counts in events.items():
            changed = changes[uid] - changes_before[uid]
            for kind in ("state", SWITCH_EVENT):
                if counts[kind] > changed:
                    problems.append(
                        f"InferenceService {uid}: {counts[kind]} {kind} events for {changed} changes"
                    )
        return problems


def _ready(port: int) -> bool:
    """Whether the replica's /readyz answers 200 (SPEC §8: ready once its webhook is registered)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def _runtime_ready(body: dict[str, Any]) -> dict[str, Any] | None:
    for condition in (body.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "RuntimeReady":
            return dict(condition)
    return None


def _retrying(call: Callable[[], Any], seconds: float = 60.0) -> None:
    """An operation through the API, again while the apiserver or etcd is coming back; 404 and 409 end it
    (what a schedule drawn without the cluster's state may meet: a reused name, a model deleted meanwhile)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            call()
            return
        except ApiException as error:
            if error.status in (404, 409):
                return
            if time.monotonic() > deadline:
                raise
        except OSError:  # urllib3 wraps connection errors in its own OSError subclasses
            if time.monotonic() > deadline:
                raise
        time.sleep(0.5)


def run(seed: int, steps: int, check_every: int, keep_logs: str = ".chaos", fault_share: float = 0.3) -> int:
    plan = schedule(seed, steps, fault_share=fault_share)
    report = Report(seed, plan)
    failed: BaseException | None = None

    def log(text: str) -> None:
        print(f"{datetime.now().strftime('%H:%M:%S.%f')[:-3]} {text}", flush=True)

    with running_control_plane(audit=True) as plane, api_client_for(plane.kubeconfig) as api:
        chaos = Chaos(plane, api, report, log=log)
        chaos.start()
        number = 0
        try:
            chaos.check()
            for number, step in enumerate(plan, start=1):
                log(f"step {number}/{len(plan)}: {step.describe()}")
                chaos.play(step)
                if number % check_every == 0 or number == len(plan):
                    log(f"  converged in {chaos.check():.1f} s")
        except BaseException as error:
            failed = error
            log(f"chaos: VIOLATION after step {number}: {error}")
            kept = Path(keep_logs) / f"seed-{seed}"
            kept.mkdir(parents=True, exist_ok=True)
            for path in plane.workdir.glob("*.log"):
                shutil.copy(path, kept / path.name)
            log(f"the replicas' and the control plane's logs are in {kept}")
        finally:
            chaos.stop()
    log(json.dumps(report.summary()))
    if failed is not None:
        log(f"chaos: seed {seed}, schedule:")
        for number, step in enumerate(plan, start=1):
            log(f"  {number}. {step.describe()}")
        share = "" if fault_share == 0.3 else f" FAULT_SHARE={fault_share}"
        log(f"replay: make chaos SEED={seed} STEPS={steps}{share}")
        return 1
    log(f"chaos: 1 passed, 0 failed (seed {seed}, {report.faults} faults, {report.checks} checks)")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.chaos", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--check-every", type=int, default=5, help="check the invariants every N steps")
    parser.add_argument("--fault-share", type=float, default=0.3, help="the share of faults among the steps")
    parser.add_argument("--print-schedule", action="store_true", help="print the schedule and exit")
    parser.add_argument("--keep-logs", default=".chaos", help="where a failed run leaves its logs (.chaos)")
    args = parser.parse_args(argv)
    if args.print_schedule:
        for number, step in enumerate(schedule(args.seed, args.steps, fault_share=args.fault_share), start=1):
            print(f"{number}. {step.describe()}")
        return 0
    return run(args.seed, args.steps, args.check_every, args.keep_logs, args.fault_share)


if __name__ == "__main__":
    sys.exit(main())
