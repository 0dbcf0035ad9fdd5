"""The image, without a Docker engine: the Dockerfile's promises, and its payload run as the image runs it.

The payload is what the Dockerfile's first stage builds: the locked dependencies installed with
`--require-hashes` from requirements.lock into a clean virtual environment, then the project's wheel (the
`wheel` fixture of conftest.py) without dependencies. Here
that environment runs `ome-selector run --help` and `kubectl-ome_selector --help` as uid/gid 65532 with no
groups, a read-only view of the environment and PYTHONDONTWRITEBYTECODE=1, as the container does. The
dependencies are installed once per (lock, interpreter) and cached; the wheel is reinstalled every run.
requirements.lock must agree with constraints.txt (CONTRIBUTING.md: regenerated right after it).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.ci_skips import prerequisite_missing

REPO_ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO_ROOT / "Dockerfile"
LOCK = REPO_ROOT / "requirements.lock"
CONSTRAINTS = REPO_ROOT / "constraints.txt"
BUILD_TOOLS = {"setuptools", "wheel"}
NONROOT = ("--reuid=65532", "--regid=65532", "--clear-groups")
#: What the build stage uninstalls from the locked dependencies (pip, setuptools and wheel go too there).
_BUILD_STAGE_UNINSTALLS = "hf-xet"


# --- the Dockerfile ----------------------------------------------------------------------------------------


def _stages() -> list[list[str]]:
    """The Dockerfile's instructions (continuations joined), split into stages."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    stages: list[list[str]] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.upper().startswith("FROM "):
            stages.append([])
        if stages:
            stages[-1].append(line)
    return stages


def test_dockerfile_is_multi_stage_slim_non_root_with_the_run_entrypoint() -> None:
    text = DOCKERFILE.read_text()
    # The base by digest (the tag before it for readers); a build may still override the whole reference.
    assert re.search(r"^ARG PYTHON_IMAGE=python:3\.11-slim-bookworm@sha256:[0-9a-f]{64}$", text, re.MULTILINE)
    build, final = _stages()
    assert build[0] == "FROM ${PYTHON_IMAGE} AS build"
    run = " ".join(line for line in build if line.startswith("RUN "))
    # Every dependency checked against its hash; the project built offline with the locked setuptools.
    assert "pip install --require-hashes --requirement requirements.lock" in run
    assert "pip install --no-deps --no-build-isolation --no-index ." in run
    # No installer and no unused native code leave the build stage.
    assert "pip uninstall --yes hf-xet pip setuptools wheel" in run
    assert "--constraint" not in run
    assert final[0] == "FROM ${PYTHON_IMAGE}"
    assert "COPY --from=build /opt/ome-selector /opt/ome-selector" in final
    # Nothing is built or installed in the final stage: no compilers, no package manager runs, no pip.
    for line in final:
        assert not re.search(r"apt-get|apk |pip |gcc|build-essential|make ", line), line
    # The base's own pip and ensurepip's wheels go, wherever the base keeps them, and the build checks it.
    removal = " ".join(line for line in final if line.startswith("RUN "))
    for place in (
        "/usr/local/lib/python3*/site-packages",
        "/usr/lib/python3/dist-packages",
        "ensurepip/_bundled",
    ):
        assert place in removal, place
    assert 'rm -rf "$d"/pip*' in removal
    assert "! python3 -c 'import pip'" in removal
    env = " ".join(line for line in final if line.startswith("ENV "))
    assert "PYTHONDONTWRITEBYTECODE=1" in env
    assert final[-1] == 'ENTRYPOINT ["ome-selector", "run"]'
    users = [line for line in final if line.startswith("USER ")]
    assert users == ["USER 65532:65532"]
    assert final.index(users[0]) > max(i for i, line in enumerate(final) if line.startswith(("RUN", "COPY")))


def test_dockerignore_sends_only_what_the_build_copies() -> None:
    lines = [
        line.strip()
        for line in (REPO_ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert lines[0] == "*"
    allowed = {line[1:].rstrip("/") for line in lines if line.startswith("!")}
    copied = {
        source.rstrip("/")
        for stage in _stages()
        for line in stage
        if line.startswith("COPY ") and "--from=" not in line
        for source in line.split()[1:-1]
    }
    assert copied == allowed


# --- the lock -----------------------------------------------------------------------------------------------


def _name(text: str) -> str:
    return re.sub(r"[-_.]+", "-", text).lower()


def _pins(lines: list[str]) -> dict[str, tuple[str, str]]:
    """name → (version, environment marker) of ``name==version[ ; marker]`` lines."""
    pins = {}
    for line in lines:
        found = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+?)(?: ; ([^\\]+?))?\s*\\?$", line)
        if found:
            pins[_name(found[1])] = (found[2], (found[3] or "").strip())
    return pins


def test_the_lock_pins_what_constraints_pin_each_with_hashes() -> None:
    lines = LOCK.read_text().splitlines()
    locked = _pins(lines)
    constrained = _pins(CONSTRAINTS.read_text().splitlines())
    runtime = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    for requirement in runtime:
        assert _name(re.split(r"[<>=!~ ;\[]", requirement)[0]) in locked, requirement
    for name, (version, marker) in locked.items():
        if name in constrained:
            assert constrained[name][0] == version, (
                f"{name}: lock {version}, constraints {constrained[name][0]}"
            )
        else:  # the build tools, and what only other platforms install
            assert name in BUILD_TOOLS or marker, name
    # Every requirement carries at least one sha256 of its files (pip --require-hashes refuses it otherwise).
    text = LOCK.read_text()
    blocks = re.split(r"\n(?=[A-Za-z])", text.split("\n", 2)[2])
    assert len(blocks) == len(locked)
    assert all("--hash=sha256:" in block for block in blocks)
    # Regenerated with the command CONTRIBUTING.md documents.
    command = lines[1].lstrip("# ").strip()
    assert command.startswith("printf 'setuptools>=75\\nwheel\\n' | uv pip compile pyproject.toml -")
    assert command in (REPO_ROOT / "CONTRIBUTING.md").read_text().replace("\\\n  ", "")


# --- the payload -------------------------------------------------------------------------------------------


def _run(*argv: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in argv],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env=env,
        cwd=REPO_ROOT,
    )


def _nonroot_env() -> dict[str, str]:
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": "/tmp",
        "PYTHONDONTWRITEBYTECODE": "1",
        "LANG": "C.UTF-8",
    }


def _works_as_nonroot(python: Path) -> bool:
    result = _run("setpriv", *NONROOT, python, "-c", "import venv", env=_nonroot_env())
    return result.returncode == 0


def _interpreter() -> Path:
    """A Python 3.11+ with venv that the non-root user can run (a pyenv under /root may not be)."""
    candidates = [Path(getattr(sys, "_base_executable", sys.executable)), Path(sys.executable)]
    candidates += [Path(p) for p in (shutil.which("python3.11"), "/usr/bin/python3") if p]
    for candidate in candidates:
        if candidate.is_file() and _works_as_nonroot(candidate):
            version = _run(candidate, "-c", "import sys; print(sys.version_info >= (3, 11))")
            if version.stdout.strip() == "True":
                return candidate
    raise prerequisite_missing("no Python 3.11+ interpreter the non-root user can run")


def _readable_by_nonroot(directory: Path) -> bool:
    probe = directory / ".nonroot-probe"
    probe.write_text("ok")
    try:
        return _run("setpriv", *NONROOT, "/bin/cat", probe, env=_nonroot_env()).stdout == "ok"
    finally:
        probe.unlink()


def _cache_root(python: Path) -> Path:
    """Keyed by the constraints, the runtime dependencies and the interpreter; in the user cache if the
    non-root user can read it there (a home directory is often private), else in /var/tmp."""
    digest = hashlib.sha256(LOCK.read_bytes())
    digest.update(str(python.resolve()).encode())
    digest.update(_BUILD_STAGE_UNINSTALLS.encode())  # the payload as the build stage leaves it
    name = f"payload-venv-{digest.hexdigest()[:16]}"
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ome-selector"
    cache.mkdir(parents=True, exist_ok=True)
    if _readable_by_nonroot(cache):
        return cache / name
    shared = Path("/var/tmp") / f"ome-selector-cache-{os.getuid()}"
    shared.mkdir(mode=0o755, exist_ok=True)
    if shared.stat().st_uid != os.getuid() or shared.stat().st_mode & 0o022:
        raise prerequisite_missing(f"{shared} is not ours alone; not using it as a cache")
    return shared / name


def _prune(cache: Path, keep: Path) -> None:
    """Other payload environments nobody used for a week (other branches, older constraints)."""
    week_ago = time.time() - 7 * 24 * 3600
    for other in cache.glob("payload-venv-*"):
        marker = other / ".complete"
        used = (marker if marker.is_file() else other).stat().st_mtime
        if other != keep and used < week_ago:
            shutil.rmtree(other, ignore_errors=True)


@pytest.fixture(scope="module")
def payload(wheel: Path) -> Iterator[Path]:
    """A virtual environment with the pinned dependencies (cached) and this wheel (fresh): its bin/.

    Work trees of one machine share the cache: a lock keeps two runs from building or reinstalling into the
    same environment at once.
    """
    python = _interpreter()
    venv = _cache_root(python)
    with (venv.parent / "payload-venv.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _prune(venv.parent, keep=venv)
        if not (venv / ".complete").is_file():
            shutil.rmtree(venv, ignore_errors=True)  # a run stopped half-way
            created = _run(python, "-m", "venv", venv)
            assert created.returncode == 0, created.stderr
            installed = _run(
                venv / "bin" / "python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                "--require-hashes", "--requirement", LOCK,
            )  # fmt: skip
            if installed.returncode != 0:
                shutil.rmtree(venv, ignore_errors=True)
                raise prerequisite_missing(
                    f"installing the wheel's dependencies failed:\n{installed.stderr[-2000:]}"
                )
            # As the Dockerfile's build stage: the unused native Xet downloader goes.
            removed = _run(
                venv / "bin" / "python", "-m", "pip", "uninstall", "--yes", "--quiet", _BUILD_STAGE_UNINSTALLS
            )
            assert removed.returncode == 0, removed.stderr
        (venv / ".complete").touch()  # also marks it as used (see _prune)
        reinstalled = _run(
            venv / "bin" / "python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
            "--no-deps", "--force-reinstall", wheel,
        )  # fmt: skip
        assert reinstalled.returncode == 0, reinstalled.stderr
        yield venv / "bin"


def _as_nonroot(*argv: str | Path) -> subprocess.CompletedProcess[str]:
    return _run("setpriv", *NONROOT, *argv, env=_nonroot_env())


def test_ome_selector_run_help_as_non_root(payload: Path) -> None:
    result = _as_nonroot(payload / "ome-selector", "run", "--help")
    assert result.returncode == 0, result.stderr
    for flag in ("--report-only", "--health-bind-address", "--webhook-bind-address", "--webhook-cert-secret"):
        assert flag in result.stdout
    version = _as_nonroot(payload / "ome-selector", "--version")
    assert version.returncode == 0, version.stderr
    assert version.stdout.startswith("ome-selector ")


def test_the_hub_client_works_without_hf_xet(payload: Path) -> None:
    """The image has no hf_xet (unused native code: headers are read with range requests); the Hub client and
    the model reader load without it."""
    python = payload / "python"
    absent = _as_nonroot(python, "-c", "import hf_xet")
    assert absent.returncode == 1, absent.stderr
    assert "No module named 'hf_xet'" in absent.stderr
    loads = _as_nonroot(python, "-c", "import ome_selector.modelfiles.hub, huggingface_hub; print('ok')")
    assert loads.returncode == 0, loads.stderr
    assert loads.stdout == "ok\n"


def test_kubectl_ome_help_as_non_root(payload: Path) -> None:
    result = _as_nonroot(payload / "kubectl-ome_selector", "--help")
    assert result.returncode == 0, result.stderr
    assert "kubectl ome-selector" in result.stdout


def test_payload_has_one_kubernetes_client_and_no_harness(payload: Path, tmp_path: Path) -> None:
    tmp_path.chmod(0o777)
    script = (
        "import importlib.util as u; "
        "print([m for m in ('kubernetes_asyncio', 'kopf', 'kubernetes', 'harness') if u.find_spec(m)])"
    )
    # From a directory outside the source tree, so only what is installed can answer.
    result = subprocess.run(
        ["setpriv", *NONROOT, str(payload / "python"), "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=_nonroot_env(),
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['kubernetes_asyncio', 'kopf']"
