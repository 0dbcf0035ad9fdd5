"""Control planes that start with CRDs already stored: etcd's data directory, seeded.

OME's CRDs are 1.7 MB of schemas. Installing them costs a fresh kube-apiserver about 10 s of CPU (each
CRD's status is written several times, and every write converts, diffs and encodes the whole schema), while
an apiserver that finds them in etcd at its start loads them in about 2 s. So the CRDs are installed once,
through the API as always (:func:`harness.crds.install_crds`), into a control plane whose etcd data directory
is then kept, keyed by the binaries and the documents, under
``${XDG_CACHE_HOME:-~/.cache}/ome-selector/etcd-seeds``; each later control plane starts from a copy. What
the apiserver serves is the same either way: the CRDs as it stored them, Established.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from harness.controlplane import find_binaries, running_control_plane

__all__ = ["SEED_ROOT", "etcd_seed"]

SEED_ROOT = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ome-selector" / "etcd-seeds"
#: Part of every key: a change to how seeds are made makes new ones.
SEED_FORMAT = 1
#: Seeds nobody used for this long go (other branches, older CRDs or binaries).
UNUSED_SECONDS = 7 * 24 * 3600


def etcd_seed(documents: list[dict[str, Any]], bin_dir: Path | None = None) -> Path:
    """etcd's data directory of a control plane holding exactly the CRDs ``documents``, built at the first
    call for these binaries and documents and reused after (a lock keeps two workers from building one at
    once). Pass it to ``running_control_plane(etcd_seed=...)``, which copies it."""
    binaries = find_binaries(bin_dir)
    key = hashlib.sha256(
        json.dumps([SEED_FORMAT, str(binaries.resolve()), documents], sort_keys=True).encode()
    ).hexdigest()[:16]
    SEED_ROOT.mkdir(parents=True, exist_ok=True)
    seed = SEED_ROOT / key
    with (SEED_ROOT / f"{key}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        complete = seed / ".complete"
        if not complete.is_file():
            _build(seed, documents, binaries)
        complete.touch()  # its last use, for the pruning
    _prune(keep=seed)
    return seed / "etcd"


def _build(seed: Path, documents: list[dict[str, Any]], binaries: Path) -> None:
    from harness.crds import install_crds  # noqa: PLC0415 - crds needs the kubernetes client; load it late

    shutil.rmtree(seed, ignore_errors=True)  # a build stopped half-way
    building = seed.with_name(f"{seed.name}.building")
    shutil.rmtree(building, ignore_errors=True)
    with running_control_plane(binaries, install_crds=False) as plane:
        install_crds(plane.kubeconfig, documents)
        plane.etcd_compact()  # the CRDs' status writes are history nobody reads: a smaller copy
        plane.etcd_defragment()
        plane.stop()  # the apiserver, then etcd: a quiet data directory
        shutil.copytree(plane.workdir / "etcd", building / "etcd")
    (building / ".complete").touch()
    building.rename(seed)


def _prune(keep: Path) -> None:
    cutoff = time.time() - UNUSED_SECONDS
    for other in SEED_ROOT.iterdir():
        if not other.is_dir() or other == keep:
            continue
        marker = other / ".complete"
        used = (marker if marker.is_file() else other).stat().st_mtime
        if used < cutoff:
            shutil.rmtree(other, ignore_errors=True)
            (SEED_ROOT / f"{other.name}.lock").unlink(missing_ok=True)
