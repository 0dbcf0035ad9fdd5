"""The ``kubectl_ome`` fixture: `kubectl ome-selector` in-process, as a user runs it from the repository
root."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from cli_runner import REPO_ROOT, Result, Run

from ome_selector.cli.kubectl_ome import run


@pytest.fixture
def kubectl_ome(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Run:
    """``kubectl_ome("runtime", "lint", ...)``; offline runs must never read the kubeconfig, so it is garbage
    and HOME is empty."""
    garbage = tmp_path / "kubeconfig"
    garbage.write_text("{{{ this is not a kubeconfig\n\x00")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("KUBECONFIG", str(garbage))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(REPO_ROOT)

    def invoke(*args: str, stdin: str | None = None) -> Result:
        if stdin is not None:
            monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
        code = run(list(args))
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return invoke
