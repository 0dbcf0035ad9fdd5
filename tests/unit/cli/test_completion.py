"""Shell completion of `ome-selector` and `kubectl-ome_selector`, and `kubectl_complete-ome_selector` (cobra's
format)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from harness.ci_skips import prerequisite_missing
from ome_selector.cli.completion import SHELLS, complete, script
from ome_selector.cli.kubectl_ome import build_parser
from ome_selector.cli.ome_selector import _parser

REPO_ROOT = Path(__file__).resolve().parents[3]


def _names(words: list[str], parser_name: str = "kubectl-ome_selector") -> tuple[list[str], int]:
    parser = build_parser() if parser_name == "kubectl-ome_selector" else _parser()
    candidates, directive = complete(parser, words)
    return [candidate.split("\t")[0] for candidate in candidates], directive


@pytest.mark.parametrize(
    ("parser", "words", "expected", "directive"),
    [
        ("kubectl-ome_selector", [""], ["completion", "model", "runtime", "status", "version"], 4),
        ("kubectl-ome_selector", ["r"], ["runtime"], 4),
        ("kubectl-ome_selector", ["runtime", ""], ["explain", "lint", "what-if"], 4),
        ("kubectl-ome_selector", ["runtime", "explain", "--out"], ["--output"], 4),
        (
            "kubectl-ome_selector",
            ["runtime", "explain", "--output", ""],
            ["table", "wide", "json", "yaml", "name"],
            4,
        ),
        ("kubectl-ome_selector", ["runtime", "explain", "-o", "w"], ["wide"], 4),
        ("kubectl-ome_selector", ["completion", ""], ["bash", "zsh", "fish"], 4),  # a positional's choices
        ("kubectl-ome_selector", ["completion", "bash", ""], [], 0),
        ("ome-selector", [""], ["check-webhook", "cleanup", "completion", "drain", "run"], 4),
        ("ome-selector", ["run", "--log-format", ""], ["json", "plain"], 4),
        ("ome-selector", ["--kubeconfig", ""], [], 0),  # a Path: the shell completes file names
        ("ome-selector", ["cleanup", "--stop"], ["--stop-deployment"], 4),
        ("ome-selector", ["cleanup", "--timeout=5", "--dry"], ["--dry-run"], 4),
    ],
)
def test_candidates_and_directive(parser: str, words: list[str], expected: list[str], directive: int) -> None:
    names, found = _names(words, parser)
    assert names == expected
    assert found == directive


def test_descriptions_are_the_help_texts() -> None:
    candidates, _ = complete(build_parser(), ["runtime", "l"])
    assert candidates == ["lint\tcheck a catalog for overlapping, tied, dead and malformed runtimes"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", *args], capture_output=True, text=True, timeout=60, check=False
    )


def test_kubectl_complete_ome_answers_in_cobras_format() -> None:
    # kubectl (>= 1.26) runs `kubectl_complete-ome_selector WORD... PARTIAL` and reads candidates, then
    # `:<directive>`.
    result = _run(
        "import sys; from ome_selector.cli.kubectl_ome import complete_main; "
        "sys.argv = ['kubectl_complete-ome_selector', 'runtime', 'w']; raise SystemExit(complete_main())"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "what-if\tshow which InferenceServices a catalog change would move\n:4\n"
    scripts = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["kubectl_complete-ome_selector"] == "ome_selector.cli.kubectl_ome:complete_main"


@pytest.mark.parametrize("prog", ["ome-selector", "kubectl-ome_selector"])
@pytest.mark.parametrize("shell", SHELLS)
def test_completion_command_prints_the_script(prog: str, shell: str) -> None:
    module = "ome_selector" if prog == "ome-selector" else "kubectl_ome"
    result = _run(
        f"from ome_selector.cli.{module} import main; import sys; "
        f"sys.argv[1:] = ['completion', '{shell}']; raise SystemExit(main())"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == script(prog, shell)
    assert f"{prog} __complete" in result.stdout


def test_bash_script_completes_through_the_cli(tmp_path: Path) -> None:
    bash = shutil.which("bash")
    if bash is None:
        raise prerequisite_missing("no bash")
    # The script calls `kubectl-ome_selector __complete ...`: a stand-in on PATH runs this interpreter's
    # module.
    (tmp_path / "kubectl-ome_selector").write_text(
        f'#!/bin/sh\nexec {sys.executable} -m ome_selector.cli.kubectl_ome "$@"\n'
    )
    (tmp_path / "kubectl-ome_selector").chmod(0o755)
    program = (
        script("kubectl-ome_selector", "bash")
        + "COMP_WORDS=(kubectl-ome_selector runtime ex); COMP_CWORD=2; _kubectl_ome_selector\n"
        + 'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    env = {**os.environ, "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run(
        [bash, "-c", program], capture_output=True, text=True, timeout=60, check=False, env=env
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "explain\n"
