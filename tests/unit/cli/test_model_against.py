"""`kubectl ome-selector model inspect DIR --against CATALOG_DIR [--model NAME]` (SPEC §10): every runtime's
verdict for the model today and once its files' values are learned, on OME's published gpt-oss catalog
entries and gpt-oss-20b's published layout: once learned it is `mxfp4`, which none of those runtimes
declares."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from harness.model_folders import write_json
from harness.quantized_models import QUANTIZED_MODELS, write_quantized
from ome_selector.cli.kubectl_ome import run
from ome_selector.review.learned import MAX_LISTED, Stranded, strands_message

OME_CATALOG = Path(__file__).resolve().parents[2] / "data" / "ome-catalog"
_RUNTIMES = {
    "a.yaml": "runtimes/srt/gpt-oss-20b-rt.yaml",
    "b.yaml": "runtimes/srt/openai/gpt-oss-20b-rt.yaml",
    "c.yaml": "runtimes/srt/lmsys/gpt-oss-20b-bf16-rt.yaml",
    "model.yaml": "models/openai/gpt-oss-20b.yaml",
}
_ISVC = {
    "apiVersion": "ome.io/v1beta1",
    "kind": "InferenceService",
    "metadata": {"name": "chat", "namespace": "default"},
    "spec": {"model": {"name": "gpt-oss-20b"}},
}
_FORMAT = "'mt:safetensors:1.0.0:GptOssForCausalLM:mxfp4:transformers:4.55.0'"
_NO_QUANTIZATION = (
    f"model format {_FORMAT} not in supported formats: model has quantization mxfp4 but runtime has no "
    "quantization requirement"
)


@pytest.fixture(scope="module")
def oss_20b(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("gpt-oss-20b")
    write_quantized(folder, QUANTIZED_MODELS["gpt-oss-20b"])
    return folder


@pytest.fixture
def catalog(tmp_path: Path) -> Path:
    folder = tmp_path / "catalog"
    folder.mkdir()
    for name, path in _RUNTIMES.items():
        shutil.copy(OME_CATALOG / path, folder / name)
    (folder / "isvc.yaml").write_text(yaml.safe_dump(_ISVC))
    return folder


def test_the_table(oss_20b: Path, catalog: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["model", "inspect", str(oss_20b), "--against", str(catalog), "--model", "gpt-oss-20b"]) == 0
    assert capsys.readouterr().out == (
        "ClusterBaseModel gpt-oss-20b: once learned it sets modelParameterSize 20.91B, quantization mxfp4, "
        "maxTokens 131072\n"
        "Selected today: ClusterServingRuntime/srt-gpt-oss-20b; once learned: -\n"
        "\n"
        "RUNTIME                                      TODAY      ONCE LEARNED   REASON (ONCE LEARNED)\n"
        f"ClusterServingRuntime/srt-gpt-oss-20b        selected   rejected       {_NO_QUANTIZATION}\n"
        f"ClusterServingRuntime/srt-gpt-oss-20b-bf16   rejected   rejected       {_NO_QUANTIZATION}, "
        "framework version mismatch (model=4.55.0, runtime=4.55.1)\n"
        f"ClusterServingRuntime/srt-gpt-oss-20b-grpc   rank 2     rejected       {_NO_QUANTIZATION}\n"
        "\n"
        "InferenceService default/chat loses ClusterServingRuntime/srt-gpt-oss-20b: RuntimeNotFound: "
        f"{_NO_QUANTIZATION}\n"
    )


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_the_document(oss_20b: Path, catalog: Path, capsys: pytest.CaptureFixture[str], output: str) -> None:
    # Without --model: the catalog's models whose storageUri is the source as given.
    model = yaml.safe_load((catalog / "model.yaml").read_text())
    model["spec"]["storage"]["storageUri"] = str(oss_20b)
    (catalog / "model.yaml").write_text(yaml.safe_dump(model))
    assert run(["model", "inspect", str(oss_20b), "--against", str(catalog), "-o", output]) == 0
    text = capsys.readouterr().out
    document = json.loads(text) if output == "json" else yaml.safe_load(text)
    (found,) = document["models"]
    assert document["source"] == str(oss_20b)
    assert (found["kind"], found["namespace"], found["name"]) == ("ClusterBaseModel", None, "gpt-oss-20b")
    assert found["set"] == {"modelParameterSize": "20.91B", "quantization": "mxfp4", "maxTokens": 131072}
    assert found["selected"] == {"today": "ClusterServingRuntime/srt-gpt-oss-20b", "learned": None}
    assert found["runtimes"][0] == {
        "kind": "ClusterServingRuntime",
        "namespace": None,
        "name": "srt-gpt-oss-20b",
        "today": {"verdict": "selected", "reason": ""},
        "learned": {"verdict": "rejected", "reason": _NO_QUANTIZATION},
    }
    assert found["inferenceServices"] == [
        {
            "namespace": "default",
            "name": "chat",
            "today": {
                "status": "True",
                "reason": "RuntimeSelected",
                "runtime": "ClusterServingRuntime/srt-gpt-oss-20b",
            },
            "learned": {"status": "False", "reason": "RuntimeNotFound", "runtime": None},
            "losesRuntime": True,
        }
    ]


def test_a_model_that_lacks_nothing_keeps_its_verdicts(
    oss_20b: Path, catalog: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = yaml.safe_load((catalog / "model.yaml").read_text())
    model["spec"] |= {"modelParameterSize": "21B", "quantization": "mxfp4", "maxTokens": 131072}
    (catalog / "model.yaml").write_text(yaml.safe_dump(model))
    assert run(["model", "inspect", str(oss_20b), "--against", str(catalog), "--model", "gpt-oss-20b"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(
        "ClusterBaseModel gpt-oss-20b: once learned it sets nothing (it sets every field)\n"
    )
    assert "loses" not in out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--model", "other"],
            "error: no BaseModel default/other nor ClusterBaseModel other in {catalog}\n",
        ),
        (
            [],
            "error: no BaseModel of namespace default nor ClusterBaseModel in {catalog} has storageUri "
            "{source}; name one with --model\n",
        ),
        (["--model", "x", "--apply", "basemodel/x"], "error: --against and --apply are not used together\n"),
        (
            ["--context", "c"],
            "error: --kubeconfig and --context are only used with --against cluster (or --apply)\n",
        ),
    ],
)
def test_errors_exit_1(
    oss_20b: Path, catalog: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    assert run(["model", "inspect", str(oss_20b), "--against", str(catalog), *extra]) == 1
    assert capsys.readouterr().err == message.format(catalog=catalog, source=oss_20b)


def test_model_needs_against(oss_20b: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["model", "inspect", str(oss_20b), "--model", "x"]) == 1
    assert capsys.readouterr().err == "error: --model is only used with --against\n"


def test_an_unreadable_catalog_exits_1(
    oss_20b: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_json(tmp_path / "bad.json", [1])
    assert run(["model", "inspect", str(oss_20b), "--against", str(tmp_path / "bad.json")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ")
    assert err.count("\n") == 1


def test_the_strand_message_lists_five_and_counts_the_rest() -> None:
    lost = [Stranded("ns", f"s{index}", "ServingRuntime/rt", "RuntimeNotFound: why") for index in range(7)]
    assert MAX_LISTED == 5
    assert strands_message(lost[:1], "quantization mxfp4") == (
        "Learning quantization mxfp4 leaves 1 InferenceService without a runtime: ns/s0 (today "
        "ServingRuntime/rt; RuntimeNotFound: why)"
    )
    message = strands_message(lost, "quantization mxfp4")
    assert message.startswith(
        "Learning quantization mxfp4 leaves 7 InferenceServices without a runtime: ns/s0"
    )
    assert message.endswith("ns/s4 (today ServingRuntime/rt; RuntimeNotFound: why); and 2 more")
    assert "ns/s5" not in message
    long = [Stranded("ns", "x" * 300, "ServingRuntime/rt", "r" * 300) for _ in range(5)]
    assert len(strands_message(long, "q")) == 1024


def test_help_shows_against(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["model", "inspect", "--help"]) == 0
    out = capsys.readouterr().out
    assert "[--against (CATALOG_DIR | cluster) [--model NAME] [-n NAMESPACE]]" in out
