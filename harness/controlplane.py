"""A local Kubernetes control plane (etcd + kube-apiserver), as controller-runtime's envtest runs it.

Used as a pytest session fixture, by `make demo`, and by `make cluster-up` / `make cluster-down`. There is no
controller-manager or scheduler: objects are stored, validated, defaulted and admitted by the real apiserver,
but nothing garbage-collects or deletes namespaces.

    python -m harness.controlplane up --dir .cluster     # background; kubeconfig in .cluster/
    python -m harness.controlplane down --dir .cluster
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import ctypes
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import yaml

from harness.pki import CertificateAuthority, service_account_signing_key, write_pair

START_TIMEOUT_S = float(os.environ.get("OME_SELECTOR_CONTROLPLANE_START_TIMEOUT", "90"))
STOP_TIMEOUT_S = 15.0
_PR_SET_PDEATHSIG = 1


class ControlPlaneError(RuntimeError):
    """The control plane could not be started; the message carries the tail of the failing log."""


#: The audit policy of :attr:`ControlPlane.audit_log`: InferenceService status writes, with what they stored.
AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived", "ResponseStarted"],
    "rules": [
        {
            "level": "RequestResponse",
            "verbs": ["patch", "update"],
            "resources": [{"group": "ome.io", "resources": ["inferenceservices/status"]}],
        },
        {"level": "None"},
    ],
}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _die_with_parent() -> None:
    # Runs in the child before exec: own process group (so stop() can signal the whole group) and a
    # SIGKILL when the parent dies, so a killed test run leaves no etcd or apiserver behind.
    os.setsid()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def find_binaries(bin_dir: Path | None = None) -> Path:
    """The directory holding kube-apiserver, etcd and kubectl.

    The first of: the argument, $OME_SELECTOR_BIN_DIR, $KUBEBUILDER_ASSETS.
    """
    candidates = [bin_dir, os.environ.get("OME_SELECTOR_BIN_DIR"), os.environ.get("KUBEBUILDER_ASSETS")]
    for candidate in candidates:
        if candidate and all((Path(candidate) / b).is_file() for b in ("kube-apiserver", "etcd", "kubectl")):
            return Path(candidate)
    raise ControlPlaneError(
        "kube-apiserver, etcd and kubectl were not found; run `make binaries` (or set OME_SELECTOR_BIN_DIR)"
    )


#: The subject common name of the client certificate the apiserver presents to webhooks.
WEBHOOK_CLIENT = "kube-apiserver-webhook-client"


@dataclass
class ControlPlane:
    """etcd and kube-apiserver on free loopback ports, with generated certificates and RBAC authorization."""

    bin_dir: Path
    workdir: Path
    kubeconfig: Path
    install_crds: bool = True
    #: Where kube-apiserver writes its audit log of InferenceService status writes (None: no audit log).
    audit_log: Path | None = None
    #: etcd's data directory to start from, copied (harness.etcd_seeds: CRDs already stored); None: empty.
    etcd_seed: Path | None = None
    _processes: list[tuple[str, subprocess.Popen[bytes]]] = field(default_factory=list, init=False)
    api_port: int = field(default=0, init=False)
    etcd_port: int = field(default=0, init=False)
    etcd_peer_port: int = field(default=0, init=False)
    startup_seconds: float = field(default=0.0, init=False)

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.api_port}"

    @property
    def pki_dir(self) -> Path:
        return self.workdir / "pki"

    def start(self) -> None:
        began = time.monotonic()
        try:
            self.pki_dir.mkdir(parents=True, exist_ok=True)
            self._write_pki()
            if self.etcd_seed is not None:
                shutil.copytree(self.etcd_seed, self.workdir / "etcd")
            self._start_etcd()
            self._start_apiserver()
            self._write_kubeconfig()
            if self.install_crds:
                from harness.crds import install_crds  # noqa: PLC0415 - keeps the client import lazy

                install_crds(self.kubeconfig)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - began

    def stop(self) -> None:
        for name, process in reversed(self._processes):
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    print(f"controlplane: {name} ignored SIGTERM; killing it", file=sys.stderr)
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
        self._processes.clear()

    @contextlib.contextmanager
    def apiserver_paused(self) -> Iterator[None]:
        """Freeze kube-apiserver (SIGSTOP) for the duration, as a brief outage looks to its clients."""
        process = next(p for name, p in self._processes if name == "kube-apiserver")
        os.kill(process.pid, signal.SIGSTOP)
        try:
            yield
        finally:
            os.kill(process.pid, signal.SIGCONT)

    def restart_apiserver(
        self, while_down: Callable[[], None] = lambda: None, *, crash: bool = False
    ) -> None:
        """Stop kube-apiserver, call ``while_down``, start it again on the same port. Its watch cache starts
        afresh, so a client resuming a watch from before gets 410 Gone.

        Stopped (SIGTERM), it refuses new connections at once but holds its open watch streams until it is
        killed STOP_TIMEOUT_S later, as a draining apiserver does; with ``crash`` (SIGKILL) every connection
        drops at once, and the gap is only as long as ``while_down`` and the start."""
        self._stop("kube-apiserver", signal.SIGKILL if crash else signal.SIGTERM)
        while_down()
        self._start_apiserver(port=self.api_port)

    def restart_etcd(self) -> None:
        """Stop etcd (the apiserver's requests fail and its watches of etcd break) and start it again on the
        same ports and data."""
        self._stop("etcd")
        self._start_etcd(ports=(self.etcd_port, self.etcd_peer_port))

    def _stop(self, name: str, first: signal.Signals = signal.SIGTERM) -> None:
        """Stop the process ``name`` (``first``, SIGKILL after STOP_TIMEOUT_S) and forget it."""
        process = next(p for n, p in self._processes if n == name)
        os.killpg(process.pid, first)
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        self._processes.remove((name, process))

    # --- etcd, behind the apiserver's back (watch-gap tests) -------------------------------------------

    def _etcd(self, call: str, request: dict[str, Any]) -> dict[str, Any]:
        """etcd's JSON gateway (``/v3/<call>``; keys and values base64), as etcdctl would call it."""
        body = json.dumps(request).encode()
        url = f"http://127.0.0.1:{self.etcd_port}/v3/{call}"
        with urllib.request.urlopen(urllib.request.Request(url, body, method="POST"), timeout=10) as answer:
            result: dict[str, Any] = json.loads(answer.read())
            return result

    def etcd_delete(self, key: str) -> int:
        """Delete ``key`` (e.g. ``/registry/ome.io/clusterbasemodels/<name>``); how many keys went."""
        encoded = base64.b64encode(key.encode()).decode()
        return int(self._etcd("kv/deleterange", {"key": encoded}).get("deleted", 0))

    def etcd_defragment(self) -> None:
        """Give the space compaction freed back to the file system."""
        self._etcd("maintenance/defragment", {})

    def etcd_compact(self) -> int:
        """Compact etcd's history up to its current revision (what the apiserver does every 5 minutes); the
        revision."""
        revision = int(self._etcd("kv/range", {"key": base64.b64encode(b"/").decode()})["header"]["revision"])
        self._etcd("kv/compaction", {"revision": revision, "physical": True})
        return revision

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.bin_dir / "kubectl"), f"--kubeconfig={self.kubeconfig}", *args],
            input=input,
            capture_output=True,
            text=True,
            check=check,
            timeout=120,
        )

    # --- internals ---------------------------------------------------------------------------------

    def _write_pki(self) -> None:
        self.ca = CertificateAuthority()
        (self.pki_dir / "ca.crt").write_bytes(self.ca.cert_pem)
        serving = self.ca.issue(
            "kube-apiserver",
            dns_names=("localhost", "kubernetes", "kubernetes.default"),
            ip_addresses=("127.0.0.1",),
            server=True,
        )
        write_pair(serving, self.pki_dir, "apiserver")
        # The admin belongs to system:masters, which RBAC always allows; other identities go through RBAC.
        self.admin = self.ca.issue("admin", organization="system:masters", client=True)
        write_pair(self.admin, self.pki_dir, "admin")
        # The client certificate the apiserver presents to every webhook that asks for one (its admission
        # configuration names it for any host), as a cluster set up for webhook client verification does.
        cert, key = write_pair(self.ca.issue(WEBHOOK_CLIENT, client=True), self.pki_dir, "webhook-client")
        webhook_users = {
            "apiVersion": "v1",
            "kind": "Config",
            "users": [{"name": "*", "user": {"client-certificate": str(cert), "client-key": str(key)}}],
        }
        (self.pki_dir / "webhook-client.kubeconfig").write_text(yaml.safe_dump(webhook_users))
        configuration = {
            "apiVersion": "apiserver.config.k8s.io/v1",
            "kind": "WebhookAdmissionConfiguration",
            "kubeConfigFile": str(self.pki_dir / "webhook-client.kubeconfig"),
        }
        admission = {
            "apiVersion": "apiserver.config.k8s.io/v1",
            "kind": "AdmissionConfiguration",
            "plugins": [
                {"name": name, "configuration": configuration}
                for name in ("ValidatingAdmissionWebhook", "MutatingAdmissionWebhook")
            ],
        }
        (self.pki_dir / "admission.yaml").write_text(yaml.safe_dump(admission))
        private, public = service_account_signing_key()
        (self.pki_dir / "sa.key").write_bytes(private)
        (self.pki_dir / "sa.pub").write_bytes(public)

    def _spawn(self, name: str, argv: Sequence[str]) -> subprocess.Popen[bytes]:
        log = (self.workdir / f"{name}.log").open("wb")
        env = dict(os.environ)
        # Kubernetes transports honour proxy variables; loopback must never go through a proxy.
        env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
        process = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            preexec_fn=_die_with_parent,  # noqa: PLW1509 - single-threaded use; see _die_with_parent
        )
        log.close()
        self._processes.append((name, process))
        return process

    def _wait_until(self, name: str, process: subprocess.Popen[bytes], probe: Any) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise ControlPlaneError(
                    f"{name} exited with {process.returncode}:\n{_tail(self.workdir / f'{name}.log')}"
                )
            if probe():
                return
            time.sleep(0.2)
        raise ControlPlaneError(
            f"{name} not ready after {START_TIMEOUT_S:.0f}s:\n{_tail(self.workdir / f'{name}.log')}"
        )

    def _start_etcd(self, ports: tuple[int, int] | None = None) -> None:
        self.etcd_port, peer_port = ports or (free_port(), free_port())
        self.etcd_peer_port = peer_port
        client_url, peer_url = f"http://127.0.0.1:{self.etcd_port}", f"http://127.0.0.1:{peer_port}"
        process = self._spawn(
            "etcd",
            [
                str(self.bin_dir / "etcd"),
                "--name=ome-selector",
                f"--data-dir={self.workdir / 'etcd'}",
                f"--listen-client-urls={client_url}",
                f"--advertise-client-urls={client_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=ome-selector={peer_url}",
                "--unsafe-no-fsync=true",
                "--log-level=warn",
            ],
        )

        def healthy() -> bool:
            try:
                with urllib.request.urlopen(f"{client_url}/health", timeout=2) as response:
                    return b'"health":"true"' in response.read()
            except (OSError, urllib.error.URLError):
                return False

        self._wait_until("etcd", process, healthy)

    def _audit_flags(self) -> list[str]:
        """Every write of an InferenceService's status, with the object it stored, written to the log before
        the answer (blocking): the record of each condition change that no watch gap can hide."""
        if self.audit_log is None:
            return []
        policy = self.workdir / "audit-policy.yaml"
        policy.write_text(json.dumps(AUDIT_POLICY))
        return [
            f"--audit-policy-file={policy}",
            f"--audit-log-path={self.audit_log}",
            "--audit-log-mode=blocking",
            "--audit-log-format=json",
        ]

    def _start_apiserver(self, port: int | None = None) -> None:
        self.api_port = port or free_port()
        pki = self.pki_dir
        process = self._spawn(
            "kube-apiserver",
            [
                str(self.bin_dir / "kube-apiserver"),
                f"--etcd-servers=http://127.0.0.1:{self.etcd_port}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={self.api_port}",
                f"--cert-dir={pki}",
                f"--tls-cert-file={pki / 'apiserver.crt'}",
                f"--tls-private-key-file={pki / 'apiserver.key'}",
                f"--client-ca-file={pki / 'ca.crt'}",
                "--authorization-mode=RBAC",
                f"--service-account-issuer=https://127.0.0.1:{self.api_port}",
                f"--service-account-key-file={pki / 'sa.pub'}",
                f"--service-account-signing-key-file={pki / 'sa.key'}",
                "--service-cluster-ip-range=10.0.0.0/24",
                "--allow-privileged=true",
                # No controller-manager runs, so nothing would create service-account tokens for pods.
                "--disable-admission-plugins=ServiceAccount",
                f"--admission-control-config-file={pki / 'admission.yaml'}",
                *self._audit_flags(),
            ],
        )
        context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        context.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))

        def ready() -> bool:
            try:
                with urllib.request.urlopen(f"{self.server}/readyz", timeout=3, context=context) as response:
                    return bool(response.status == 200)
            except (OSError, urllib.error.URLError):
                return False

        self._wait_until("kube-apiserver", process, ready)

    def _write_kubeconfig(self) -> None:
        pki = self.pki_dir
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "local",
                    "cluster": {"server": self.server, "certificate-authority": str(pki / "ca.crt")},
                }
            ],
            "users": [
                {
                    "name": "admin",
                    "user": {
                        "client-certificate": str(pki / "admin.crt"),
                        "client-key": str(pki / "admin.key"),
                    },
                }
            ],
            "contexts": [{"name": "local", "context": {"cluster": "local", "user": "admin"}}],
            "current-context": "local",
        }
        self.kubeconfig.parent.mkdir(parents=True, exist_ok=True)
        self.kubeconfig.write_text(yaml.safe_dump(config))
        self.kubeconfig.chmod(0o600)


@contextlib.contextmanager
def running_control_plane(
    bin_dir: Path | None = None,
    *,
    install_crds: bool = True,
    audit: bool = False,
    etcd_seed: Path | None = None,
) -> Iterator[ControlPlane]:
    """Start a control plane in a temporary directory and always stop it and remove the directory; with
    ``audit``, kube-apiserver logs every status write of an InferenceService to ``audit.log`` there; with
    ``etcd_seed``, etcd starts from a copy of that data directory (harness.etcd_seeds)."""
    workdir = Path(tempfile.mkdtemp(prefix="ome-selector-cp-"))
    plane = ControlPlane(
        find_binaries(bin_dir),
        workdir,
        workdir / "kubeconfig",
        install_crds=install_crds,
        audit_log=workdir / "audit.log" if audit else None,
        etcd_seed=etcd_seed,
    )
    try:
        plane.start()
        yield plane
    finally:
        plane.stop()
        shutil.rmtree(workdir, ignore_errors=True)


# --- make cluster-up / cluster-down ----------------------------------------------------------------


def _serve(directory: Path) -> int:
    """Foreground supervisor: runs the control plane until SIGTERM/SIGINT (what `up` starts detached)."""
    state = directory / "state"
    shutil.rmtree(state, ignore_errors=True)
    plane = ControlPlane(find_binaries(), state, directory / "kubeconfig")
    stopping = False

    def request_stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    plane.start()
    (directory / "ready").write_text(f"{plane.server}\n")
    try:
        while not stopping and all(p.poll() is None for _, p in plane._processes):
            time.sleep(0.5)
    finally:
        plane.stop()
        (directory / "ready").unlink(missing_ok=True)
        (directory / "supervisor.pid").unlink(missing_ok=True)
    return 0


def _up(directory: Path) -> int:
    directory = directory.resolve()
    directory.mkdir(parents=True, exist_ok=True)
    pid_file = directory / "supervisor.pid"
    if pid_file.exists() and _alive(int(pid_file.read_text())):
        print(f"control plane already running (kubeconfig {directory / 'kubeconfig'})")
        return 0
    (directory / "ready").unlink(missing_ok=True)
    bin_dir = find_binaries()
    with (directory / "controlplane.log").open("wb") as log:
        supervisor = subprocess.Popen(
            [sys.executable, "-m", "harness.controlplane", "serve", "--dir", str(directory)],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            # The harness is not installed: the supervisor finds it from the repository root.
            env={**os.environ, "OME_SELECTOR_BIN_DIR": str(bin_dir), "PYTHONPATH": _pythonpath()},
        )
    pid_file.write_text(str(supervisor.pid))
    deadline = time.monotonic() + START_TIMEOUT_S + 30
    while not (directory / "ready").exists():
        if supervisor.poll() is not None or time.monotonic() > deadline:
            print(_tail(directory / "controlplane.log"), file=sys.stderr)
            _down(directory)
            return 1
        time.sleep(0.3)
    print(f"control plane up at {(directory / 'ready').read_text().strip()}")
    print(f"  export KUBECONFIG={directory / 'kubeconfig'}")
    print(f'  export PATH="{bin_dir}:$PATH"   # the project\'s kubectl and helm')
    print("  make cluster-down   # stops it")
    return 0


def _pythonpath() -> str:
    """$PYTHONPATH with the repository root (the directory holding ``harness/``) in front."""
    root = str(Path(__file__).resolve().parents[1])
    return os.pathsep.join(filter(None, (root, os.environ.get("PYTHONPATH"))))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _down(directory: Path) -> int:
    pid_file = directory / "supervisor.pid"
    if not pid_file.exists():
        print("control plane not running")
        return 0
    pid = int(pid_file.read_text())
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S * 2
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if _alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
    pid_file.unlink(missing_ok=True)
    print("control plane stopped")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.controlplane")
    parser.add_argument("command", choices=["up", "down", "serve"])
    parser.add_argument("--dir", type=Path, default=Path(".cluster"))
    args = parser.parse_args(argv)
    try:
        if args.command == "up":
            return _up(args.dir)
        if args.command == "down":
            return _down(args.dir)
        return _serve(args.dir.resolve())
    except ControlPlaneError as error:
        print(f"controlplane: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
