"""`ome-selector run` as a separate process against a local control plane (the demo and the benchmarks).

Unlike `OperatorThread`, this is the real command line, with its own interpreter and memory, observed only
through its health and metrics endpoint.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from harness.controlplane import ControlPlane, free_port

START_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class RunningOperator:
    process: subprocess.Popen[bytes]
    health_port: int
    log: Path

    def metric(self, name: str, **labels: str) -> float:
        """The sum of the samples of `name` whose labels include `labels`, scraped from /metrics."""
        return metric_in(self.scrape(), name, **labels)

    def scrape(self) -> str:
        """The /metrics text once (read several metrics from one scrape with :func:`metric_in`)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/metrics", timeout=5) as response:
            return str(response.read().decode())


def metric_in(text: str, name: str, **labels: str) -> float:
    """The sum of the samples of `name` in a /metrics text whose labels include `labels`."""
    total = 0.0
    for line in text.splitlines():
        match = re.match(rf"^{re.escape(name)}(?:\{{(.*)\}})? (\S+)$", line)
        if not match:
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', match.group(1) or ""))
        if all(found.get(key) == value for key, value in labels.items()):
            total += float(match.group(2))
    return total


def healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


@contextmanager
def operator_process(
    plane: ControlPlane, *arguments: str, name: str = "operator"
) -> Iterator[RunningOperator]:
    """Start `ome-selector run <arguments>` and yield once /healthz answers (the first listing is indexed)."""
    port = free_port()
    log = plane.workdir / f"{name}.log"
    argv = [
        sys.executable, "-m", "ome_selector.cli.ome_selector", "--kubeconfig", str(plane.kubeconfig), "run",
        "--health-bind-address", f"127.0.0.1:{port}", "--log-format", "plain", *arguments,
    ]  # fmt: skip
    with log.open("wb") as sink:
        process = subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not healthy(port):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"ome-selector did not become ready:\n{log.read_text()[-3000:]}")
            time.sleep(0.1)
        yield RunningOperator(process, port, log)
    finally:
        process.send_signal(signal.SIGTERM)  # graceful: the webhook registration is removed on the way out
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
