"""`kubectl ome-selector runtime explain` and `lint` on OME's published catalog as vendored, each snapshot
(harness.ome_data), the whole directory at once: OME's four runtime names defined in two files each are read
as `kubectl apply -R -f` leaves them (the later file in kubectl's order), with one warning per name (SPEC §6),
and both commands exit 0."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from cli_runner import REPO_ROOT, Run

from harness.ome_data import OME_5E4857E, OME_CFA05C6, SNAPSHOTS, OmeSnapshot, duplicate_warnings

#: (name, the earlier file, the later file) under runtimes/srt/, in the order of their first definitions.

#: Per snapshot: the runtimes once the duplicates are resolved, and lint's findings per code.
RUNTIMES = {OME_CFA05C6.id: 201, OME_5E4857E.id: 206}
FINDINGS = {
    OME_CFA05C6.id: {"DEAD001": 178, "SIZE003": 20, "RANK001": 9, "RANK002": 3, "SERV001": 2, "QUANT001": 2},
    OME_5E4857E.id: {
        "DEAD001": 183,
        "SIZE003": 20,
        "RANK001": 9,
        "RANK002": 3,
        "SERV001": 2,
        "QUANT001": 2,
    },
}


@pytest.fixture(params=SNAPSHOTS, ids=[snapshot.id for snapshot in SNAPSHOTS])
def snapshot(request: pytest.FixtureRequest) -> OmeSnapshot:
    chosen: OmeSnapshot = request.param
    return chosen


def catalog_dir(snapshot: OmeSnapshot) -> str:
    """The catalog as a user names it from the repository root."""
    return str(snapshot.catalog.relative_to(REPO_ROOT))


def test_explain_on_the_whole_catalog(kubectl_ome: Run, snapshot: OmeSnapshot) -> None:
    directory = catalog_dir(snapshot)
    model = "llama-3-2-3b-instruct"
    result = kubectl_ome("runtime", "explain", "-f", directory, "--model", model, "-o", "json")
    assert result.code == 0, result.err
    assert result.err.splitlines() == [
        "Warning: model llama-3-2-3b-instruct has no modelFormat yet; runtime selection waits for it",
        *duplicate_warnings(directory),
    ]
    document = json.loads(result.out)
    assert len(document["runtimes"]) == RUNTIMES[snapshot.id]
    assert document["selected"] is None


def test_lint_on_the_whole_catalog(kubectl_ome: Run, snapshot: OmeSnapshot) -> None:
    directory = catalog_dir(snapshot)
    table = kubectl_ome("runtime", "lint", "-f", directory)
    counts = FINDINGS[snapshot.id]
    total = sum(counts.values())
    assert table.code == 0
    assert table.err.splitlines() == [
        *duplicate_warnings(directory),
        f"0 errors, {total} warnings (namespace default and cluster scope)",
    ]
    # The header, each finding but the dead runtimes, and their one summary line (SPEC §11).
    assert len(table.out.splitlines()) == 1 + total - counts["DEAD001"] + 1
    document = kubectl_ome("runtime", "lint", "-f", directory, "-o", "json")
    assert document.code == 0
    assert document.err.splitlines() == duplicate_warnings(directory)
    listed = json.loads(document.out)
    assert Counter(f["code"] for f in listed["findings"]) == {
        c: n for c, n in counts.items() if c != "DEAD001"
    }
    assert [(s["code"], s["count"]) for s in listed["summarised"]] == [("DEAD001", counts["DEAD001"])]


def test_the_later_file_in_kubectls_order_is_the_one_read(kubectl_ome: Run, snapshot: OmeSnapshot) -> None:
    """srt-mixtral-8x7b-instruct: runtimes/srt/mistralai/… ([40B, 50B]) comes before
    runtimes/srt/mixtral-8x7b-instruct-rt.yaml ([45B, 50B]) in kubectl's walk, where the directory "mistralai"
    sorts among the files (a walk that reads a directory's files before its subdirectories would keep the
    other)."""
    directory = catalog_dir(snapshot)
    model = "mixtral-8x7b-instruct-v0-1"
    result = kubectl_ome("runtime", "explain", "-f", directory, "--model", model, "-o", "wide")
    assert result.code == 0, result.err
    header, *rows = result.out.splitlines()
    start, end = header.index("RANGE"), header.index("REASON")
    ranges = [row[start:end].strip() for row in rows if row.split()[0] == "srt-mixtral-8x7b-instruct"]
    assert ranges == ["[45B, 50B]"]


def test_the_warnings_come_before_a_lookup_error(kubectl_ome: Run, snapshot: OmeSnapshot) -> None:
    directory = catalog_dir(snapshot)
    result = kubectl_ome("runtime", "explain", "-f", directory, "--model", "no-such-model")
    assert (result.code, result.out) == (1, "")
    assert result.err.splitlines() == [
        *duplicate_warnings(directory),
        "error: model no-such-model not found: no BaseModel in namespace default and no ClusterBaseModel",
    ]
