"""SPEC §11 QUANT001: a model whose storage is known and whose files will give its family's quantization,
which none of the runtimes serving it today declares (strict presence rejects them all once learned)."""

from __future__ import annotations

from typing import Any

import pytest
from selection_builders import NS, entry, model_doc, runtime

from ome_selector.api.loading import load_resource
from ome_selector.api.resources import Model, Resource
from ome_selector.catalog.catalog import Catalog
from ome_selector.review.lint import FAMILY_QUANTIZATIONS, Code, lint

OSS = "GptOssForCausalLM"


def _model(storage: str | None = "hf://openai/gpt-oss-20b", **kwargs: Any) -> Model:
    document = model_doc("oss", arch=kwargs.pop("arch", OSS), **kwargs)
    if storage is not None:
        document["spec"]["storage"] = {"storageUri": storage}
    resource = load_resource(document)
    assert isinstance(resource, Model)
    return resource


def _quant001(resources: list[Resource]) -> list[tuple[list[str], str]]:
    findings = lint(Catalog.from_resources(resources), [NS])
    return [([str(key) for key in f.objects], f.message) for f in findings if f.code is Code.QUANT001]


def test_the_family_table() -> None:
    assert dict(FAMILY_QUANTIZATIONS) == {"GptOssForCausalLM": "mxfp4", "DeepseekV3ForCausalLM": "fp8"}


def test_a_model_every_serving_runtime_would_reject() -> None:
    resources: list[Resource] = [_model(), runtime("rt-a", entry(arch=OSS)), runtime("rt-b", entry(arch=OSS))]
    resources.append(runtime("rt-llama", entry(arch="LlamaForCausalLM")))  # never served it: not named
    assert _quant001(resources) == [
        (
            ["ClusterBaseModel oss", "ClusterServingRuntime rt-a", "ClusterServingRuntime rt-b"],
            "ClusterBaseModel oss has no quantization yet; its files will give quantization mxfp4 (every "
            "published GptOssForCausalLM checkpoint declares it), which none of the runtimes that serve it "
            "today declares (rt-a, rt-b): once learned, no runtime serves it; add quantization: mxfp4 to "
            "their entries, or set the model's quantization",
        )
    ]


@pytest.mark.parametrize(
    "resources",
    [
        pytest.param([_model(storage=None), runtime("rt", entry(arch=OSS))], id="storage unknown"),
        pytest.param([_model(quant="mxfp4"), runtime("rt", entry(arch=OSS, quant="mxfp4"))], id="quantized"),
        pytest.param([_model(quant="fp8"), runtime("rt", entry(arch=OSS, quant="fp8"))], id="set otherwise"),
        pytest.param(
            [_model(arch="LlamaForCausalLM"), runtime("rt", entry(arch="LlamaForCausalLM"))],
            id="other family",
        ),
        pytest.param(
            [_model(), runtime("rt", entry(arch=OSS)), runtime("rt-q", entry(arch=OSS, quant="mxfp4"))],
            id="one runtime declares it",
        ),
        pytest.param([_model(), runtime("rt", entry(arch="LlamaForCausalLM"))], id="nothing serves it today"),
    ],
)
def test_no_finding(resources: list[Resource]) -> None:
    assert _quant001(resources) == []


def test_deepseek_v3_learns_fp8_and_a_namespaced_model_is_judged_from_its_namespace() -> None:
    model = _model(storage="hf://deepseek-ai/DeepSeek-V3", arch="DeepseekV3ForCausalLM", namespace=NS)
    served = runtime("rt", entry(arch="DeepseekV3ForCausalLM"), namespace=NS)
    ((objects, message),) = _quant001([model, served])
    assert objects == [f"BaseModel {NS}/oss", f"ServingRuntime {NS}/rt"]
    assert "will give quantization fp8 (every published DeepseekV3ForCausalLM checkpoint" in message
