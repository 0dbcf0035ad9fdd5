"""The `make e2e` scripts (hack/): they need Docker or root, so `make test` never runs them; this keeps them
from rotting between runs of `make e2e`."""

from __future__ import annotations

import importlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path
from subprocess import PIPE
from typing import Any
from unittest import mock

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
HACK = REPO_ROOT / "hack"
SCRIPTS = sorted([*HACK.glob("*.sh"), *(HACK / "e2e").glob("*.sh")])
SOURCED = {HACK / "e2e" / "lib.sh"}
SUITE = HACK / "e2e" / "suite.sh"
KIND_SH = HACK / "e2e" / "kind.sh"
NODE_IMAGE_SH = HACK / "e2e" / "node-image.sh"


def _lib_value(name: str) -> str:
    """A default from hack/e2e/lib.sh, e.g. ``SCENARIO_MODULE=${SCENARIO_MODULE:-x}`` gives ``x``."""
    text = (HACK / "e2e" / "lib.sh").read_text()
    match = re.search(rf"^{name}=\$\{{{name}:-([^}}]+)\}}$", text, re.MULTILINE)
    assert match, f"{name} is not set in hack/e2e/lib.sh"
    return match.group(1)


def _bash(script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=False, cwd=REPO_ROOT)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_script_parses_and_passes_shellcheck(script: Path) -> None:
    assert bool(script.stat().st_mode & 0o111) is (script not in SOURCED)
    result = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    if shutil.which("shellcheck"):
        checked = subprocess.run(
            ["shellcheck", "-x", str(script)], capture_output=True, text=True, check=False, cwd=REPO_ROOT
        )
        assert checked.returncode == 0, checked.stdout


@pytest.mark.parametrize(
    ("target", "command"),
    [
        ("e2e", "hack/e2e/kind.sh e2e"),
        ("e2e-up", "hack/e2e/kind.sh up"),
        ("e2e-down", "hack/e2e/kind.sh down"),
    ],
)
def test_make_targets_run_the_scripts(target: str, command: str) -> None:
    makefile = (REPO_ROOT / "Makefile").read_text()
    assert re.search(rf"^{target}:.*\n\t.*{re.escape(command)}$", makefile, re.MULTILINE)


def test_make_e2e_runs_the_suite_on_kind() -> None:
    text = KIND_SH.read_text()
    assert '"$E2E/suite.sh" run' in text
    assert '"$KIND" create cluster' in text
    # The hand-made cluster is gone: kind is the only e2e path.
    assert not (HACK / "e2e" / "cluster.sh").exists()
    assert not (HACK / "e2e-kind.sh").exists()


def test_ci_runs_make_test_then_one_chaos_schedule_then_make_e2e() -> None:
    commands = [
        line for line in (REPO_ROOT / ".ci" / "run").read_text().splitlines() if line.startswith("make")
    ]
    assert commands == ["make test", "make chaos SEED=8 STEPS=12 CHECK_EVERY=3", "make e2e"]


def test_suite_runs_the_shared_scenario_with_arguments_it_accepts() -> None:
    scenario: Any = importlib.import_module(_lib_value("SCENARIO_MODULE"))
    text = re.sub(r"\\\n\s*", " ", SUITE.read_text())
    (line,) = [line for line in text.splitlines() if '-m "$SCENARIO_MODULE"' in line]
    args = shlex.split(line.split('-m "$SCENARIO_MODULE"', 1)[1].split("|", 1)[0])
    replacements = {
        "$KUBECONFIG": "/tmp/kubeconfig",
        "$SCENARIO_NAMESPACE": "e2e",
        '$(command -v "$KUBECTL")': "kubectl",
    }
    args = [replacements.get(a, a) for a in args]
    with (
        mock.patch("kubernetes.config.new_client_from_config") as new_client,
        mock.patch.object(scenario, "run_scenario") as run,
    ):
        assert scenario.main(args) == 0
    new_client.assert_called_once_with(config_file="/tmp/kubeconfig")
    assert run.call_args.args[2] == "e2e"
    assert run.call_args.kwargs["webhook"] is True


def test_summary_is_the_plain_last_line(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.write_text("pass the cluster came up\npass helm install\nfail kubectl get isvc -o wide\n")
    result = _bash(f"source hack/e2e/lib.sh && summary {shlex.quote(str(results))}")
    assert result.stdout == "e2e: 2 passed, 1 failed\n", result.stderr


def test_the_pip_ca_bundle_is_found_in_the_variables_pip_honours(tmp_path: Path) -> None:
    bundle = tmp_path / "ca.pem"
    bundle.write_text("-----BEGIN CERTIFICATE-----\n")
    found = _bash(
        f"unset PIP_CERT SSL_CERT_FILE; export REQUESTS_CA_BUNDLE={bundle}; "
        "source hack/e2e/lib.sh && pip_ca_bundle"
    )
    assert found.stdout.strip() == str(bundle)
    none = _bash("unset PIP_CERT SSL_CERT_FILE REQUESTS_CA_BUNDLE; source hack/e2e/lib.sh && pip_ca_bundle")
    assert none.returncode != 0
    assert none.stdout == ""


def test_scenario_entry_point_rejects_missing_kubeconfig() -> None:
    scenario: Any = importlib.import_module(_lib_value("SCENARIO_MODULE"))
    with pytest.raises(SystemExit):
        scenario.main([])


def _function(script: Path, name: str) -> str:
    """The definition of shell function ``name`` in ``script`` (from ``name() {`` to the first ``}`` line)."""
    match = re.search(rf"^{name}\(\) {{.*?^}}$", script.read_text(), re.MULTILINE | re.DOTALL)
    assert match, f"{name} is not defined in {script}"
    return match.group(0)


def test_a_second_run_waits_until_the_first_releases_the_host_lock(tmp_path: Path) -> None:
    env = {**os.environ, "E2E_HOST_LOCK": str(tmp_path / "e2e.lock")}
    take = "source hack/e2e/lib.sh && host_lock && echo locked"
    first = subprocess.Popen(
        ["bash", "-c", f"{take} && read -r _"], stdin=PIPE, stdout=PIPE, text=True, cwd=REPO_ROOT, env=env
    )
    second = None
    try:
        assert first.stdout is not None
        assert first.stdin is not None
        assert first.stdout.readline() == "locked\n"
        second = subprocess.Popen(
            ["bash", "-c", take], stdout=PIPE, stderr=PIPE, text=True, cwd=REPO_ROOT, env=env
        )
        assert second.stderr is not None
        assert second.stderr.readline() == "e2e: another make e2e runs on this host; waiting for it\n"
        assert second.poll() is None  # blocked in flock while the first holds the lock
        first.stdin.write("\n")
        first.stdin.close()
        assert first.wait(timeout=30) == 0
        out, _ = second.communicate(timeout=30)
        assert (second.returncode, out) == (0, "locked\n")
    finally:
        for process in (first, second):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()


def test_the_cluster_processes_do_not_hold_the_host_lock(tmp_path: Path) -> None:
    """A cluster left up by `make e2e-up` (the provider's processes that `kind create` starts) must not keep
    `make e2e-down` (or the next `make e2e`) waiting."""
    lock = tmp_path / "e2e.lock"
    pid_file = tmp_path / "sleep.pid"
    kind = _stub(
        tmp_path / "kind",
        f'if [ "$1" = create ]; then sleep 60 >/dev/null 2>&1 & echo $! >{shlex.quote(str(pid_file))}; fi',
    )
    script = "\n".join(
        [
            "source hack/e2e/lib.sh",
            _function(KIND_SH, "create"),
            f"STATE={shlex.quote(str(tmp_path / 'state'))} KIND={shlex.quote(str(kind))} CP_BIN=/bin",
            "PROVIDER=docker NODE_IMAGE=kindest/node:v1.36.3 PROJECT_REF=ome-selector:dev CLUSTER=e2e",
            "host_lock",
            "create",
        ]
    )
    result = subprocess.run(
        ["bash", "-c", script],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO_ROOT,
        env={**os.environ, "E2E_HOST_LOCK": str(lock)},
    )
    daemon = int(pid_file.read_text())
    try:
        assert result.returncode == 0, result.stderr
        assert Path(f"/proc/{daemon}").exists()
        free = subprocess.run(["flock", "-n", str(lock), "true"], check=False)
        assert free.returncode == 0, "a process `kind create` left running holds the host lock"
    finally:
        os.kill(daemon, signal.SIGKILL)


def test_the_image_cache_keeps_the_three_newest_project_images(tmp_path: Path) -> None:
    for i in range(5):
        archive = tmp_path / f"ome-selector-{i:016x}.oci.tar"
        archive.write_bytes(b"")
        os.utime(archive, (1_000_000 + i, 1_000_000 + i))
    others = [tmp_path / "pause-0123456789abcdef.oci.tar", tmp_path / "python-bookworm-0123.rootfs.tar"]
    for other in others:
        other.write_bytes(b"")
        os.utime(other, (1, 1))
    (tmp_path / ".build.abcdef").mkdir()
    script = "\n".join(
        [
            "source hack/e2e/lib.sh",
            _function(HACK / "e2e" / "images.sh", "keep_newest"),
            f"IMAGE_CACHE={shlex.quote(str(tmp_path))}",
            "keep_newest 3 'ome-selector-*.oci.tar'",
        ]
    )
    result = _bash(script)
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [".build.abcdef", *(p.name for p in others), *(f"ome-selector-{i:016x}.oci.tar" for i in (2, 3, 4))]
    )


def _stub(path: Path, body: str) -> Path:
    path.write_text(f"#!/usr/bin/env bash\n{body}\n")
    path.chmod(0o755)
    return path


INTERRUPTS = pytest.mark.parametrize("interrupt", [signal.SIGINT, signal.SIGTERM], ids=["INT", "TERM"])


def _interrupt_when(
    process: subprocess.Popen[str], started: Path, interrupt: signal.Signals
) -> tuple[str, str]:
    """``interrupt`` to the process group (SIGINT: what a Ctrl-C does) once ``started`` exists; the output."""
    try:
        for _ in range(300):
            if started.exists() or process.poll() is not None:
                break
            time.sleep(0.1)
        assert started.exists(), process.communicate(timeout=5)
        os.killpg(process.pid, interrupt)
        return process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@INTERRUPTS
@pytest.mark.usefixtures("sigint_as_in_a_terminal")
def test_an_interrupted_suite_stops_after_the_current_command(
    tmp_path: Path, interrupt: signal.Signals
) -> None:
    started, results, scratch = tmp_path / "helm-started", tmp_path / "results", tmp_path / "tmp"
    scratch.mkdir()
    helm = _stub(tmp_path / "helm", f"touch {shlex.quote(str(started))}; sleep 60")
    kubectl = _stub(tmp_path / "kubectl", "exit 1")
    suite = subprocess.Popen(
        [str(SUITE), "run"],
        stdout=PIPE,
        stderr=PIPE,
        text=True,
        cwd=REPO_ROOT,
        start_new_session=True,
        env={
            **os.environ,
            "KUBECONFIG": "/dev/null",
            "HELM": str(helm),
            "KUBECTL": str(kubectl),
            "E2E_RESULTS": str(results),
            "TMPDIR": str(scratch),
        },
    )
    out, err = _interrupt_when(suite, started, interrupt)
    assert suite.returncode == 130, (out, err)
    assert "e2e: interrupted" in err
    assert list(scratch.iterdir()) == []  # no scratch file left behind
    assert "kubectl apply" not in out + (results.read_text() if results.exists() else "")


@INTERRUPTS
@pytest.mark.usefixtures("sigint_as_in_a_terminal")
def test_an_interrupted_make_e2e_tears_down_and_counts_as_a_failure(
    tmp_path: Path, interrupt: signal.Signals
) -> None:
    """kind.sh's e2e with the cluster and the suite stubbed: a Ctrl-C during the suite."""
    fake = tmp_path / "e2e"
    fake.mkdir()
    calls, started = tmp_path / "calls", tmp_path / "suite-started"
    _stub(fake / "suite.sh", f"touch {shlex.quote(str(started))}; sleep 60")
    record = shlex.quote(str(calls))
    script = "\n".join(
        [
            "set -euo pipefail",
            "source hack/e2e/lib.sh",
            *(_function(KIND_SH, name) for name in ("suite_env", "finish", "e2e")),
            f"E2E={shlex.quote(str(fake))} PYTHON=python3 CP_BIN=/bin PROJECT_REF=ome-selector:dev",
            "begin() { :; }",
            "start() { :; }",
            f'create() {{ echo "cluster up" >>{record}; }}',
            f'down() {{ echo "cluster down" >>{record}; }}',
            "e2e",
        ]
    )
    run = subprocess.Popen(
        ["bash", "-c", script],
        stdout=PIPE,
        stderr=PIPE,
        text=True,
        cwd=REPO_ROOT,
        start_new_session=True,
    )
    out, err = _interrupt_when(run, started, interrupt)
    assert run.returncode == 1, (out, err)
    assert calls.read_text() == "cluster up\ncluster down\n"
    assert out.splitlines()[-1] == "e2e: 2 passed, 1 failed"


def test_make_e2e_refuses_a_cluster_left_up_in_the_checkout(tmp_path: Path) -> None:
    """Refused before anything starts: a failed start's teardown would remove the `make e2e-up` cluster."""
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "provider").write_text("podman\n")
    script = "\n".join(
        [
            "source hack/e2e/lib.sh",
            _function(KIND_SH, "begin"),
            f"STATE={shlex.quote(str(tmp_path / 'state'))} HOST_LOCK={shlex.quote(str(tmp_path / 'lock'))}",
            "choose_provider() { :; }",
            "check_host() { :; }",
            "prepare() { echo went on; }",
            "begin && prepare",
        ]
    )
    result = _bash(script)
    assert result.returncode == 1
    assert result.stdout == ""
    assert f"a cluster is already up in {tmp_path / 'state'} (make e2e-down first)" in result.stderr


@pytest.mark.parametrize(
    ("docker", "provider"),
    [("exit 0", "docker"), ("exit 1", "podman")],
    ids=["engine answers", "no engine"],
)
def test_the_provider_is_docker_where_an_engine_answers_else_podman(
    tmp_path: Path, docker: str, provider: str
) -> None:
    _stub(tmp_path / "docker", docker)
    script = "\n".join(
        [
            "source hack/e2e/lib.sh",
            _function(KIND_SH, "choose_provider"),
            f"unset E2E_PROVIDER; PATH={shlex.quote(str(tmp_path))}:$PATH",
            'choose_provider && echo "$PROVIDER"',
        ]
    )
    result = _bash(script)
    assert result.stdout == f"{provider}\n", result.stderr


COREFILE = """.:53 {
    errors
    kubernetes cluster.local in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
    }
    prometheus :9153
    cache 30
    loop
}
"""
FORWARD_BLOCK = "    forward . /etc/resolv.conf {\n       max_concurrent 1000\n    }\n"


@pytest.mark.parametrize(
    "forward",
    [FORWARD_BLOCK, "    forward . 10.0.0.53\n"],
    ids=["block", "line"],
)
def test_coredns_forwards_nothing_off_the_machine(forward: str) -> None:
    corefile = COREFILE.replace("    cache 30\n", forward + "    cache 30\n")
    script = "\n".join(
        [
            "source hack/e2e/lib.sh",
            _function(KIND_SH, "corefile_without_forwarding"),
            "corefile_without_forwarding",
        ]
    )
    result = subprocess.run(
        ["bash", "-c", script], input=corefile, capture_output=True, text=True, check=False, cwd=REPO_ROOT
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == COREFILE


def test_the_node_network_avoids_every_route_and_address_of_the_host() -> None:
    routes = "10.231.7.0/24 dev br0\ndefault via 192.0.2.1 dev eth0\n10.231.8.5 dev tun0\n"
    script = "\n".join(["source hack/e2e/lib.sh", _function(KIND_SH, "free_subnet"), "free_subnet"])
    result = subprocess.run(
        ["bash", "-c", script], input=routes, capture_output=True, text=True, check=False, cwd=REPO_ROOT
    )
    assert result.stdout == "10.231.9.0/24 10.231.9.1\n", result.stderr


def test_the_node_image_has_a_builder_for_every_image_kubeadm_names() -> None:
    listed = (
        "registry.k8s.io/kube-apiserver:v1.36.3\nregistry.k8s.io/kube-controller-manager:v1.36.3\n"
        "registry.k8s.io/kube-scheduler:v1.36.3\nregistry.k8s.io/kube-proxy:v1.36.3\n"
        "registry.k8s.io/coredns/coredns:v1.14.2\nregistry.k8s.io/pause:3.10.2\nregistry.k8s.io/etcd:3.6.8-0\n"
    )
    script = "\n".join(
        ["source hack/e2e/lib.sh", _function(NODE_IMAGE_SH, "image_components"), "image_components"]
    )
    result = subprocess.run(
        ["bash", "-c", script], input=listed, capture_output=True, text=True, check=False, cwd=REPO_ROOT
    )
    components = [line.split(" ", 1)[0] for line in result.stdout.splitlines()]
    assert components == [
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "kube-proxy",
        "coredns",
        "pause",
        "etcd",
    ], result.stderr
    builders = _function(NODE_IMAGE_SH, "component_images")
    for component in components:
        assert re.search(rf"^ +([a-z-]+ \| )?{component}( \| [a-z-]+)?\)", builders, re.MULTILINE), component


@pytest.mark.parametrize(
    ("path", "stubs", "line"),
    [
        (
            "{stubs}:$PATH",
            {"id": "echo 1000"},
            "no Docker engine answers, and podman as kind's provider needs root here",
        ),
        (
            "{stubs}",
            {"id": "echo 0", "uname": "echo Linux"},
            "no Docker engine answers, and podman is neither installed nor installable (no apt-get)",
        ),
    ],
    ids=["not root", "no podman, no apt-get"],
)
def test_a_host_without_what_kind_needs_gets_one_line_and_status_3(
    tmp_path: Path, path: str, stubs: dict[str, str], line: str
) -> None:
    for name, body in stubs.items():
        stub = tmp_path / name
        stub.write_text(f"#!/bin/sh\n{body}\n")  # (no `env bash`: PATH may hold the stubs alone)
        stub.chmod(0o755)
    script = "\n".join(
        [
            "source hack/e2e/lib.sh",
            _function(KIND_SH, "check_host"),
            "ensure_packages() { echo went on; }",
            f"PROVIDER=podman PATH={path.format(stubs=shlex.quote(str(tmp_path)))}",
            "check_host",
        ]
    )
    result = subprocess.run(
        ["/bin/bash", "-c", script], capture_output=True, text=True, check=False, cwd=REPO_ROOT
    )
    assert (result.returncode, result.stdout, result.stderr) == (3, "", f"e2e: cannot run here: {line}\n")
