"""The chart as chart-testing would lint it, and its generated documentation.

`helm lint --strict` with every ci/*-values.yaml, yamllint with chart-testing's rules
(hack/chart/lintconf.yaml), Chart.yaml against chart-testing's yamale schema (hack/chart/chart_schema.yaml),
and the chart README's values table and the schema's descriptions and defaults as `make chart-readme` writes
them from values.yaml.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness import chart, chart_docs

CI_VALUES = sorted((chart.CHART_DIR / "ci").glob("*-values.yaml"))
LINT_CONFIG = chart.REPO_ROOT / "hack" / "chart" / "lintconf.yaml"
CHART_SCHEMA = chart.REPO_ROOT / "hack" / "chart" / "chart_schema.yaml"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)


def test_there_is_a_ci_values_file_per_mode() -> None:
    assert {path.name for path in CI_VALUES} >= {
        "default-values.yaml",
        "cert-manager-values.yaml",
        "namespaced-report-only-values.yaml",
        "no-webhook-values.yaml",
        "model-metadata-proxy-values.yaml",
        "host-network-values.yaml",
        "hooks-scheduling-values.yaml",
    }


@pytest.mark.parametrize("values", CI_VALUES, ids=[path.name for path in CI_VALUES])
def test_helm_lint_strict_with_each_ci_values_file(helm: Path, values: Path) -> None:
    result = _run(
        str(helm),
        "lint",
        "--strict",
        "--kube-version",
        chart.KUBE_VERSION,
        str(chart.CHART_DIR),
        "--values",
        str(values),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[WARNING]" not in result.stdout, result.stdout
    assert "[INFO]" not in result.stdout, result.stdout  # helm's INFO: e.g. a missing icon


def test_yamllint_with_chart_testings_rules() -> None:
    files = [chart.CHART_DIR / "Chart.yaml", chart.CHART_DIR / "values.yaml", *CI_VALUES]
    result = _run(sys.executable, "-m", "yamllint", "--strict", "-c", str(LINT_CONFIG), *map(str, files))
    assert result.returncode == 0, result.stdout + result.stderr


def _yamale(chart_yaml: Path) -> subprocess.CompletedProcess[str]:
    return _run(sys.executable, "-m", "yamale.command_line", "-s", str(CHART_SCHEMA), str(chart_yaml))


def test_chart_yaml_passes_chart_testings_schema_and_a_broken_one_does_not(tmp_path: Path) -> None:
    assert _yamale(chart.CHART_DIR / "Chart.yaml").returncode == 0
    broken = yaml.safe_load((chart.CHART_DIR / "Chart.yaml").read_text())
    del broken["version"]
    broken["maintainers"] = [{"email": "no-name@example.com"}]
    (tmp_path / "Chart.yaml").write_text(yaml.safe_dump(broken))
    result = _yamale(tmp_path / "Chart.yaml")
    assert result.returncode == 1
    assert "version: Required field missing" in result.stdout
    assert "maintainers.0.name: Required field missing" in result.stdout


def test_chart_metadata() -> None:
    metadata = yaml.safe_load((chart.CHART_DIR / "Chart.yaml").read_text())
    # matchConditions (the InferenceService webhook) are GA from 1.30; -0 admits provider builds.
    assert metadata["kubeVersion"] == ">=1.30.0-0"
    for key in ("home", "sources", "maintainers", "icon"):
        assert metadata[key], key
    annotations = metadata["annotations"]
    assert annotations["artifacthub.io/license"] == "Apache-2.0"
    images = yaml.safe_load(annotations["artifacthub.io/images"])
    assert images[0]["image"].endswith(f":{metadata['appVersion']}")
    crds = {crd["kind"] for crd in yaml.safe_load(annotations["artifacthub.io/crds"])}
    assert crds == {
        "BaseModel",
        "ClusterBaseModel",
        "ServingRuntime",
        "ClusterServingRuntime",
        "InferenceService",
    }


def test_the_kubernetes_version_rendered_for_is_the_one_tested() -> None:
    script = (chart.REPO_ROOT / "hack" / "ensure-binaries.sh").read_text()
    assert f'K8S_VERSION="${{K8S_VERSION:-{chart.KUBE_VERSION}}}"' in script


def test_helm_refuses_a_cluster_older_than_1_30(helm: Path) -> None:
    old = _run(str(helm), "template", "x", str(chart.CHART_DIR), "--kube-version", "1.29.9")
    assert old.returncode != 0
    assert "incompatible with Kubernetes v1.29.9" in old.stderr
    assert (
        _run(str(helm), "template", "x", str(chart.CHART_DIR), "--kube-version", "1.30.4-gke.1").returncode
        == 0
    )


# --- the generated documentation ---------------------------------------------------------------------------


def test_chart_readme_and_schema_docs_are_up_to_date() -> None:
    stale = [
        str(path.relative_to(chart.REPO_ROOT))
        for path, content in chart_docs.expected_files().items()
        if path.read_text() != content
    ]
    assert not stale, f"out of date: {stale}; run `make chart-readme`"
    assert chart_docs.undocumented() == []


def test_every_schema_key_has_a_description_and_every_documented_one_its_default() -> None:
    schema = json.loads(chart_docs.SCHEMA.read_text())
    nodes = dict(chart_docs.schema_properties(schema))
    assert [path for path, node in nodes.items() if "description" not in node] == []
    values = yaml.safe_load(chart_docs.VALUES.read_text())
    for row in chart_docs.rows():
        node = nodes[row.path]
        assert node["default"] == row.default, row.path
        tree: Any = values
        for key in row.path.split("."):
            tree = tree[key]
        assert tree == row.default


def test_helm_show_readme_has_every_documented_value(helm: Path) -> None:
    readme = _run(str(helm), "show", "readme", str(chart.CHART_DIR)).stdout
    for row in chart_docs.rows():
        assert f"| `{row.path}` |" in readme, row.path


_VALUES = """\
# A header, not attached to anything.

# A group.
group:
  # -- A documented key
  # on two lines.
  key: 1
  # -- A free-form map.
  free:
    anything: {a: 1}
  undocumented: true
# -- A list of maps: their keys are not keys of values.yaml.
items:
  - name: x
    value: y
plain: 2
"""


def test_generator_reads_comments_and_finds_undocumented_keys() -> None:
    assert chart_docs.documented(_VALUES) == {
        "group.key": "A documented key on two lines.",
        "group.free": "A free-form map.",
        "items": "A list of maps: their keys are not keys of values.yaml.",
    }
    assert chart_docs.group_comments(_VALUES) == {"group": "A group."}
    assert chart_docs.undocumented(_VALUES) == ["group.undocumented", "plain"]
    rows = chart_docs.rows(_VALUES)
    assert [(row.path, row.default) for row in rows] == [
        ("group.key", 1),
        ("group.free", {"anything": {"a": 1}}),
        ("items", [{"name": "x", "value": "y"}]),
    ]
    assert chart_docs.table(rows, {}).splitlines()[2:] == [
        "| `group.key` |  | `1` | A documented key on two lines. |",
        '| `group.free` |  | `{"anything": {"a": 1}}` | A free-form map. |',
        '| `items` |  | `[{"name": "x", "value": "y"}]` | '
        "A list of maps: their keys are not keys of values.yaml. |",
    ]


def test_the_plain_install_holds_no_uninstall_hook() -> None:
    docs = [doc for doc in yaml.safe_load_all(chart.INSTALL_MANIFEST.read_text()) if doc]
    hooks = [
        (doc["kind"], doc["metadata"]["name"])
        for doc in docs
        if "pre-delete" in doc["metadata"].get("annotations", {}).get("helm.sh/hook", "")
    ]
    assert hooks == []  # `kubectl apply` would run the cleanup at once and stop the operator
    assert not [doc for doc in docs if doc["metadata"]["name"].endswith("-cleanup")]
