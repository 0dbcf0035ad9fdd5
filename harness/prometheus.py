"""Prometheus for the tests: `promtool` and a real, short-lived `prometheus` server from Debian's package.

``hack/ensure-prometheus.sh`` provides both (unpacked from the package into the user's cache when they are
not installed). :class:`PrometheusServer` runs one on 127.0.0.1 with a temporary data directory, a static
scrape of the given targets labelled as a Kubernetes scrape labels them, fast scrape and evaluation intervals
and the given rule files, and stops it on exit.
"""

from __future__ import annotations

import json
import os
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml

from harness.chart import REPO_ROOT
from harness.controlplane import free_port
from harness.kube import eventually

__all__ = ["DASHBOARD", "PrometheusNotFoundError", "PrometheusServer", "dashboard_queries", "find_prometheus"]

ENSURE_SCRIPT = REPO_ROOT / "hack" / "ensure-prometheus.sh"
DASHBOARD = REPO_ROOT / "charts" / "ome-selector" / "dashboards" / "ome-selector.json"


class PrometheusNotFoundError(RuntimeError):
    """No prometheus and promtool: hack/ensure-prometheus.sh could not provide them."""


def find_prometheus() -> Path:
    """The directory holding ``prometheus`` and ``promtool`` ($PROMETHEUS_BIN_DIR, else the script's)."""
    result = subprocess.run(
        [str(ENSURE_SCRIPT)], capture_output=True, text=True, timeout=600, check=False, env=os.environ
    )
    directory = Path(result.stdout.strip()) if result.returncode == 0 else None
    if directory is None or not (directory / "promtool").is_file():
        raise PrometheusNotFoundError(f"hack/ensure-prometheus.sh failed: {result.stderr.strip()}")
    return directory


def dashboard_queries(*, namespace: str = ".*", job: str = ".*") -> list[tuple[str, str]]:
    """(panel title, expression) of every query of the dashboard, with ``$__rate_interval`` as 1m and
    Grafana's ``$namespace`` and ``$job`` as ``namespace`` and ``job`` (by default as a person who picked
    "All" would have them; a single value picked is substituted as it is)."""
    found = []
    for panel in json.loads(DASHBOARD.read_text())["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"].replace("$__rate_interval", "1m")
            found.append((panel["title"], expr.replace("$namespace", namespace).replace("$job", job)))
    return found


def promtool(bin_dir: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(bin_dir / "promtool"), *args], capture_output=True, text=True, timeout=120, check=False, cwd=cwd
    )


class PrometheusServer:
    """``prometheus`` scraping ``targets`` (host:port) as job ``job`` every ``interval``, evaluating
    ``rule_files`` as often, in ``directory`` (its config, data and log).

    Every target gets ``labels`` (e.g. the ``namespace`` a Kubernetes scrape adds) and a ``pod`` label: the
    n-th of ``pods``, by default ``<job>-<n>``."""

    def __init__(
        self,
        bin_dir: Path,
        directory: Path,
        *,
        targets: Sequence[str],
        rule_files: Sequence[Path] = (),
        job: str = "ome-selector",
        labels: Mapping[str, str] | None = None,
        pods: Sequence[str] | None = None,
        interval: str = "1s",
    ) -> None:
        pods = [f"{job}-{index}" for index in range(len(targets))] if pods is None else list(pods)
        if len(pods) != len(targets):
            raise ValueError(f"{len(targets)} targets but {len(pods)} pod names")
        self.bin_dir = bin_dir
        self.directory = directory
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = {
            "global": {
                "scrape_interval": interval,
                "evaluation_interval": interval,
                "scrape_timeout": interval,
            },
            "rule_files": [str(path) for path in rule_files],
            # Each target labelled as Kubernetes service discovery labels a replica: its pod, and the given
            # labels (a ServiceMonitor's scrape adds the namespace).
            "scrape_configs": [
                {
                    "job_name": job,
                    "static_configs": [
                        {"targets": [target], "labels": {**(labels or {}), "pod": pod}}
                        for target, pod in zip(targets, pods, strict=True)
                    ],
                }
            ],
        }
        self.config_file = directory / "prometheus.yml"
        self.config_file.write_text(yaml.safe_dump(config))
        self.log_file = directory / "prometheus.log"
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> PrometheusServer:
        log = self.log_file.open("wb")
        self._process = subprocess.Popen(
            [
                str(self.bin_dir / "prometheus"),
                f"--config.file={self.config_file}",
                f"--storage.tsdb.path={self.directory / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--storage.tsdb.retention.time=1h",
                "--log.level=warn",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a Ctrl-C of the test run reaches pytest, which stops it in __exit__
        )
        log.close()
        try:
            eventually(self._ready, what="Prometheus ready", timeout=60, interval=0.2)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)

    def _ready(self) -> bool:
        self._check_running()
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    def _check_running(self) -> None:
        if self._process is not None and self._process.poll() is not None:
            code, log = self._process.returncode, self.log_file.read_text()
            raise RuntimeError(f"prometheus exited with {code}: {log}")

    def api(self, path: str, **params: str) -> Any:
        """The ``data`` of a successful ``/api/v1/<path>`` answer (raises on an error answer)."""
        self._check_running()
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        try:
            with urllib.request.urlopen(f"{self.url}/api/v1/{path}{query}", timeout=10) as response:
                body = json.load(response)
        except urllib.error.HTTPError as error:
            body = json.load(error)
        if body.get("status") != "success":
            raise ValueError(f"/api/v1/{path} {params}: {body.get('errorType')}: {body.get('error')}")
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self.api("query", query=expr)["result"]
        return result

    def alerts(self, name: str) -> list[dict[str, Any]]:
        """The alerts named ``name``, pending or firing, as ``/api/v1/alerts`` lists them."""
        return [a for a in self.api("alerts")["alerts"] if a["labels"].get("alertname") == name]
