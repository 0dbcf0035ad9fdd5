"""`make e2e-kind` needs Docker and kind, so it never runs here; this keeps its script from rotting."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path
from unittest import mock

import pytest

from harness import scenario

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "hack" / "e2e-kind.sh"


def test_script_parses_and_is_executable() -> None:
    assert SCRIPT.stat().st_mode & 0o111
    result = subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    if shutil.which("shellcheck"):
        checked = subprocess.run(["shellcheck", str(SCRIPT)], capture_output=True, text=True, check=False)
        assert checked.returncode == 0, checked.stdout


def test_make_target_runs_the_script() -> None:
    makefile = (REPO_ROOT / "Makefile").read_text()
    assert re.search(r"^e2e-kind:.*\n\t.*hack/e2e-kind\.sh", makefile, re.MULTILINE)


def test_script_runs_the_shared_scenario_with_arguments_it_accepts() -> None:
    text = re.sub(r"\\\n\s*", " ", SCRIPT.read_text())
    (line,) = [line for line in text.splitlines() if "-m harness.scenario" in line]
    args = shlex.split(line.split("-m harness.scenario", 1)[1])
    args = ["/tmp/kubeconfig" if a == "$KUBECONFIG" else a for a in args]
    args = [a.replace("$SCENARIO_NAMESPACE", "e2e").replace("$KUBECTL", "kubectl") for a in args]
    with (
        mock.patch("kubernetes.config.new_client_from_config") as new_client,
        mock.patch.object(scenario, "run_scenario") as run,
    ):
        assert scenario.main(args) == 0
    new_client.assert_called_once_with(config_file="/tmp/kubeconfig")
    assert run.call_args.args[2] == "e2e"
    assert run.call_args.kwargs["webhook"] is True


def test_scenario_entry_point_rejects_missing_kubeconfig() -> None:
    with pytest.raises(SystemExit):
        scenario.main([])
