"""The `make e2e` / `make e2e-kind` scripts (hack/): they need root or Docker, so `make test` never runs them;
this keeps them from rotting between runs of `make e2e`."""

from __future__ import annotations

import importlib
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
HACK = REPO_ROOT / "hack"
SCRIPTS = sorted([*HACK.glob("*.sh"), *(HACK / "e2e").glob("*.sh")])
SOURCED = {HACK / "e2e" / "lib.sh"}
SUITE = HACK / "e2e" / "suite.sh"


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
        ("e2e-kind", "hack/e2e-kind.sh"),
        ("e2e", "hack/e2e/run.sh e2e"),
        ("e2e-up", "hack/e2e/run.sh up"),
        ("e2e-down", "hack/e2e/run.sh down"),
    ],
)
def test_make_targets_run_the_scripts(target: str, command: str) -> None:
    makefile = (REPO_ROOT / "Makefile").read_text()
    assert re.search(rf"^{target}:.*\n\t.*{re.escape(command)}$", makefile, re.MULTILINE)


def test_both_e2e_entry_points_run_the_same_suite() -> None:
    assert "hack/e2e/suite.sh run" in (HACK / "e2e-kind.sh").read_text()
    assert '"$E2E/suite.sh" run' in (HACK / "e2e" / "run.sh").read_text()


def test_ci_runs_make_test_then_make_e2e() -> None:
    commands = [
        line for line in (REPO_ROOT / ".ci" / "run").read_text().splitlines() if line.startswith("make")
    ]
    assert commands == ["make test", "make e2e"]


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
