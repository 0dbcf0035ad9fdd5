"""`kubectl ome-selector model inspect`: the SPEC §10 document, the summary table, -v, exit status 1 with one
line naming the file for every unreadable input, and no raw control character in the table, -o json, -o yaml
or an error line (SPEC §10.4). The expected outputs are written from the SPEC by hand."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from hub_standin import Repo, hub_standin

from harness.model_folders import (
    BERT_MINILM_CONFIG,
    QWEN2_5_0_5B,
    bert_minilm_tensors,
    write_json,
    write_safetensors,
    write_sharded,
)
from ome_selector.cli import model_apply
from ome_selector.cli.kubectl_ome import run
from ome_selector.cli.model_apply import ApplyError
from ome_selector.cli.model_inspect import render_inspection
from ome_selector.modelfiles import ModelMetadata, NameVersion, WeightFile, metadata_document
from ome_selector.selection.messages import escape_controls

KUBECTL_OME = Path(sys.executable).parent / "kubectl-ome_selector"


@pytest.fixture
def minilm(tmp_path: Path) -> Path:
    folder = tmp_path / "all-MiniLM-L6-v2"
    write_json(folder / "config.json", BERT_MINILM_CONFIG)
    write_safetensors(folder / "model.safetensors", bert_minilm_tensors(), {"format": "pt"})
    return folder


def _minilm_document(source: str) -> dict[str, object]:
    """SPEC §10's example, for the MiniLM folder at ``source``."""
    return {
        "source": source,
        "parameterCount": 22713728,
        "estimated": False,
        "quantAware": False,
        "modelParameterSize": "22.71M",
        "modelFormat": {"name": "safetensors", "version": "1.0.0"},
        "modelArchitecture": "BertModel",
        "modelFramework": {"name": "transformers", "version": "4.8.2"},
        "quantization": None,
        "maxTokens": 512,
        "files": [{"name": "model.safetensors", "tensors": 104, "parameters": 22713728, "quantAware": False}],
        "notes": [],
    }


def test_json_is_the_section_10_document(minilm: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["model", "inspect", str(minilm), "-o", "json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == _minilm_document(str(minilm))
    assert list(json.loads(out)) == list(_minilm_document(str(minilm)))  # the order of the SPEC's keys
    assert err == ""


def test_yaml_is_the_same_document(minilm: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["model", "inspect", str(minilm), "--output", "yaml"]) == 0
    assert yaml.safe_load(capsys.readouterr().out) == _minilm_document(str(minilm))


def test_the_source_is_echoed_as_given(minilm: Path, capsys: pytest.CaptureFixture[str]) -> None:
    relative = os.path.relpath(minilm)
    assert run(["model", "inspect", relative, "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["source"] == relative


def test_table(minilm: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["model", "inspect", str(minilm)]) == 0
    assert capsys.readouterr().out == (
        f"Source:              {minilm}\n"
        "Parameters:          22713728 (exact)\n"
        "modelParameterSize:  22.71M\n"
        "modelFormat:         safetensors 1.0.0\n"
        "modelArchitecture:   BertModel\n"
        "modelFramework:      transformers 4.8.2\n"
        "quantization:        -\n"
        "maxTokens:           512\n"
        "\n"
        "FILE                TENSORS   PARAMETERS   QUANTAWARE\n"
        "model.safetensors   104       22713728     false\n"
    )


def test_estimated_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_json(tmp_path / "config.json", QWEN2_5_0_5B)
    assert run(["model", "inspect", str(tmp_path), "-o", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["parameterCount"] == 494_032_768
    assert (document["estimated"], document["modelParameterSize"]) == (True, "494.03M")
    assert (document["modelFormat"], document["files"]) == (None, [])
    assert run(["model", "inspect", str(tmp_path)]) == 0
    table = capsys.readouterr().out
    assert "Parameters:          494032768 (estimated from config.json)\n" in table
    assert "modelFormat:         -\n" in table
    assert "FILE" not in table


def test_verbose_reports_the_bytes_read(minilm: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["model", "inspect", str(minilm), "-v", "-o", "json"]) == 0
    read = (
        (minilm / "config.json").stat().st_size
        + 8
        + int.from_bytes((minilm / "model.safetensors").read_bytes()[:8], "little")
    )
    assert capsys.readouterr().err == (
        f"read {read} bytes in 2 files (JSON files and safetensors headers only)\n"
    )


def _shard_missing(model: Path) -> None:
    """The index names a shard that is not there."""
    (model / "model.safetensors").rename(model / "model-1.safetensors")
    index = {"weight_map": {"a": "model-1.safetensors", "b": "model-2.safetensors"}}
    write_json(model / "model.safetensors.index.json", index)


def _truncate(path: Path) -> None:
    with path.open("r+b") as stream:
        stream.truncate(100)


@pytest.mark.parametrize(
    ("damage", "file", "reason"),
    [
        (lambda m: (m / "model.safetensors").write_bytes((10**9).to_bytes(8, "little")), "model.safetensors",
         "safetensors header length 1000000000 bytes exceeds the limit of 10485760 bytes"),
        (lambda m: _truncate(m / "model.safetensors"), "model.safetensors",
         "truncated: the safetensors header is 11432 bytes, the file has 92 of them"),
        (lambda m: (m / "config.json").write_text('{"architectures": ["BertModel"],}'), "config.json",
         "invalid JSON: Expecting property name enclosed in double quotes at line 1"),
        (lambda m: [(m / name).unlink() for name in ("config.json", "model.safetensors")], "config.json",
         "missing (and no model_index.json): not a model folder"),
        (_shard_missing, "model-2.safetensors", "missing (a shard named in model.safetensors.index.json)"),
    ],
)  # fmt: skip
def test_unreadable_input_exits_1_with_one_line_naming_the_file(
    minilm: Path, capsys: pytest.CaptureFixture[str], damage: Callable[[Path], object], file: str, reason: str
) -> None:
    damage(minilm)
    assert run(["model", "inspect", str(minilm), "-o", "json"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"error: {minilm / file}: {reason}\n"


def test_a_missing_folder_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["model", "inspect", str(tmp_path / "none")]) == 1
    assert capsys.readouterr().err == f"error: {tmp_path / 'none'}: no such directory\n"


@pytest.mark.parametrize(
    "argv",
    [
        ["model", "inspect"],
        ["model"],
        ["model", "inspect", ".", "-o", "wide"],
        ["model", "inspect", "a", "b"],
        ["model", "inspect", ".", "--apply"],
        ["model", "inspect", ".", "--apply", ""],
    ],
)
def test_usage_errors_exit_1(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert run(argv) == 1
    assert "error:" in capsys.readouterr().err


@pytest.mark.parametrize(
    "target",
    ["llama", "model/llama", "basemodel/", "/llama", "clusterbasemodel/a/b", "inferenceservice/x", "sr/x"],
)
def test_apply_needs_a_model_kind_and_a_name(
    minilm: Path, target: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["model", "inspect", str(minilm), "--apply", target]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    expected = f"expected KIND/NAME with KIND basemodel or clusterbasemodel, got {target!r}"
    assert f"error: argument --apply: {expected}\n" in err


@pytest.mark.parametrize(
    ("options", "complaint"),
    [
        (["-n", "team-a"], "-n is only used with --apply"),
        (["--context", "c"], "--context is only used with --apply"),
        (["--kubeconfig", "k", "-n", "x"], "-n, --kubeconfig are only used with --apply"),
    ],
)
def test_cluster_options_only_go_with_apply(
    minilm: Path, options: list[str], complaint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["model", "inspect", str(minilm), *options]) == 1
    assert capsys.readouterr() == ("", f"error: {complaint}\n")


def test_apply_with_an_unreadable_kubeconfig_exits_1(
    minilm: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "kubeconfig"
    broken.write_text("clusters: [}\n")
    argv = ["model", "inspect", str(minilm), "--apply", "BaseModel/m", "--kubeconfig", str(broken)]
    assert run(argv) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("error: cannot read the kubeconfig: ")
    assert err.count("\n") == 1


def test_apply_reads_the_model_files_before_the_cluster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder that cannot be read fails first: no kubeconfig is needed to find that out."""
    argv = ["model", "inspect", str(tmp_path / "none"), "--apply", "clusterbasemodel/m"]
    assert run([*argv, "--kubeconfig", str(tmp_path / "absent")]) == 1
    assert capsys.readouterr().err == f"error: {tmp_path / 'none'}: no such directory\n"


def test_help_shows_the_synopsis(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["model", "inspect", "--help"]) == 0
    out = capsys.readouterr().out
    assert "(DIR | hf://ORG/NAME[@REVISION]) [-o table|json|yaml|name|jsonpath=TEMPLATE] [-v]" in out
    assert "[-o manifest [--kind basemodel|clusterbasemodel] [--name NAME] [-n NAMESPACE]]" in out
    assert "[--apply KIND/NAME [-n NAMESPACE] [--kubeconfig PATH] [--context NAME]]" in out
    assert "llama, mistral, qwen2, qwen3" in out
    assert "hf_quant_config.json" in out
    assert '"quantAware"' in out


def test_the_installed_command_reads_the_hub(minilm: Path, tmp_path: Path) -> None:
    """`kubectl-ome_selector` as a user runs it, against the stand-in Hub named by HF_ENDPOINT, with
    HF_TOKEN."""
    with hub_standin() as hub:
        hub.repos["sentence-transformers/all-MiniLM-L6-v2"] = Repo(minilm, token="hf_secret")
        env = {
            **os.environ,
            "HF_ENDPOINT": hub.url,
            "HF_TOKEN": "hf_secret",
            "HF_HOME": str(tmp_path / "hf-home"),
        }
        uri = "hf://sentence-transformers/all-MiniLM-L6-v2@main"
        done = subprocess.run(
            [KUBECTL_OME, "model", "inspect", uri, "-o", "json", "-v"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        served = hub.bytes_served
        bad = subprocess.run(
            [KUBECTL_OME, "model", "inspect", "hf://acme/absent"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert (done.returncode, done.stderr) == (
        0,
        f"read {served} bytes in 4 HTTP requests (JSON files and safetensors headers only)\n",
    )
    assert json.loads(done.stdout) == _minilm_document(uri)
    assert (bad.returncode, bad.stdout) == (1, "")
    assert bad.stderr == (
        "error: hf://acme/absent: repository not found, or private and HF_TOKEN is missing or has no access "
        "(HTTP 404)\n"
    )


@pytest.mark.usefixtures("sigint_as_in_a_terminal")
def test_ctrl_c_ends_a_hub_read_at_once_with_130(tmp_path: Path) -> None:
    """SPEC §10.5: Ctrl-C while shards' headers trickle in (each would take minutes) ends the command with
    status 130 and no traceback, without waiting for the requests in flight. The command starts as a
    terminal's foreground job does, SIGINT at its default: one started with SIGINT ignored keeps ignoring it,
    as every program does (``make test &`` from a script starts the tests so)."""
    folder = tmp_path / "sharded"
    write_json(folder / "config.json", {"architectures": ["X"]})
    write_sharded(folder, {f"w{index}": ("F32", [4]) for index in range(4)}, 4)
    with hub_standin() as hub:
        hub.repos["acme/slow"] = Repo(folder)
        hub.trickle = 1.0  # a byte a second
        env = {**os.environ, "HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf-home")}
        env.pop("HF_TOKEN", None)
        with subprocess.Popen(
            [KUBECTL_OME, "model", "inspect", "hf://acme/slow"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ) as command:
            while not any(request.path.endswith(".safetensors") for request in hub.requests_snapshot()):
                assert command.poll() is None, command.communicate()
                time.sleep(0.05)
            command.send_signal(signal.SIGINT)
            out, err = command.communicate(timeout=30)  # the headers alone would take minutes
    assert (command.returncode, out, err) == (130, "", "")


# --- no raw control character in any output (SPEC §10.4) ---------------------------------------------------

#: Each character of §7's set that §10.4 names, and how the table (and error lines), ``-o json`` and
#: ``-o yaml`` write it: written from the SPEC by hand.
HOSTILE = [
    pytest.param("\x07", r"\x07", r"\u0007", r"\x07", id="C0-BEL"),
    pytest.param("\x1b", r"\x1b", r"\u001b", r"\x1b", id="C0-ESC"),
    pytest.param("\r", r"\r", r"\r", r"\r", id="C0-CR"),
    pytest.param("\x7f", r"\x7f", r"\u007f", r"\x7f", id="DEL"),
    pytest.param("\x85", r"\x85", r"\u0085", r"\x85", id="C1-NEL"),
    pytest.param("\x9b", r"\x9b", r"\u009b", r"\x9b", id="C1-CSI"),
    pytest.param("\u061c", r"\u061c", r"\u061c", r"\u061c", id="ALM"),
    pytest.param("\u200f", r"\u200f", r"\u200f", r"\u200f", id="RLM"),
    pytest.param("\u202e", r"\u202e", r"\u202e", r"\u202e", id="RLO"),
    pytest.param("\u2066", r"\u2066", r"\u2066", r"\u2066", id="LRI"),
    pytest.param("\u2028", r"\u2028", r"\u2028", r"\u2028", id="LINE-SEPARATOR"),
]


def _hostile_metadata(char: str) -> ModelMetadata:
    """Metadata whose source, file name and learned strings all hold ``char`` (the grammars of §10.3 keep
    it out of learned values; the printers must not rely on that)."""
    return ModelMetadata(
        source=f"/models/m{char}x",
        parameter_count=10,
        estimated=False,
        model_format=NameVersion("safetensors", "1.0.0"),
        architecture=f"Arch{char}x",
        framework=NameVersion("transformers", f"4{char}x"),
        quantization=f"q{char}x",
        max_tokens=512,
        files=(WeightFile(f"shard{char}x.safetensors", 1, 10),),
    )


def _no_raw_control(text: str) -> None:
    raw = [char for char in text if char != "\n" and escape_controls(char) != char]
    assert raw == []


@pytest.mark.parametrize(("char", "table", "as_json", "as_yaml"), HOSTILE)
def test_the_table_escapes_source_file_names_and_learned_strings(
    char: str, table: str, as_json: str, as_yaml: str
) -> None:
    out = render_inspection(_hostile_metadata(char), "table")
    _no_raw_control(out)
    for expected in (
        f"Source:              /models/m{table}x\n",
        f"modelArchitecture:   Arch{table}x\n",
        f"modelFramework:      transformers 4{table}x\n",
        f"quantization:        q{table}x\n",
        f"shard{table}x.safetensors   1",
    ):
        assert expected in out


@pytest.mark.parametrize(("char", "table", "as_json", "as_yaml"), HOSTILE)
def test_json_writes_json_escapes(char: str, table: str, as_json: str, as_yaml: str) -> None:
    metadata = _hostile_metadata(char)
    out = render_inspection(metadata, "json")
    _no_raw_control(out)
    for expected in (
        f'"source": "/models/m{as_json}x"',
        f'"modelArchitecture": "Arch{as_json}x"',
        f'"version": "4{as_json}x"',
        f'"quantization": "q{as_json}x"',
        f'"name": "shard{as_json}x.safetensors"',
    ):
        assert expected in out
    assert json.loads(out) == metadata_document(metadata)  # escaped, not changed


@pytest.mark.parametrize(("char", "table", "as_json", "as_yaml"), HOSTILE)
def test_yaml_writes_double_quoted_escapes(char: str, table: str, as_json: str, as_yaml: str) -> None:
    metadata = _hostile_metadata(char)
    out = render_inspection(metadata, "yaml")
    _no_raw_control(out)
    for expected in (
        f'source: "/models/m{as_yaml}x"\n',
        f'modelArchitecture: "Arch{as_yaml}x"\n',
        f'version: "4{as_yaml}x"\n',
        f'quantization: "q{as_yaml}x"\n',
        f'name: "shard{as_yaml}x.safetensors"\n',
    ):
        assert expected in out
    assert yaml.safe_load(out) == metadata_document(metadata)


HOSTILE_NAME = "m\x1b[2J\x9b\u202etxt.exe"
HOSTILE_SHOWN = {
    "table": r"m\x1b[2J\x9b\u202etxt.exe",
    "json": r"m\u001b[2J\u009b\u202etxt.exe",
    "yaml": r"m\x1b[2J\x9b\u202etxt.exe",
}


@pytest.mark.parametrize("output", ["table", "json", "yaml"])
def test_a_folder_with_control_characters_in_its_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], output: str
) -> None:
    folder = tmp_path / HOSTILE_NAME
    write_json(folder / "config.json", BERT_MINILM_CONFIG)
    write_safetensors(folder / "model.safetensors", bert_minilm_tensors(), {"format": "pt"})
    assert run(["model", "inspect", str(folder), "-o", output]) == 0
    out, err = capsys.readouterr()
    _no_raw_control(out)
    assert f"{tmp_path}/{HOSTILE_SHOWN[output]}" in out
    assert err == ""


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda folder: None, id="missing folder"),
        pytest.param(lambda folder: write_json(folder / "config.json", []), id="malformed config.json"),
    ],
)
def test_error_lines_escape_the_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: Callable[[Path], object]
) -> None:
    folder = tmp_path / HOSTILE_NAME
    make(folder)
    assert run(["model", "inspect", str(folder)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    _no_raw_control(err)
    assert err.startswith(f"error: {tmp_path}/{HOSTILE_SHOWN['table']}")
    assert err.count("\n") == 1


def test_an_apply_error_line_is_escaped(
    minilm: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise ApplyError("cannot patch BaseModel a/b: denied \x1b[2J\u202e")

    monkeypatch.setattr(model_apply, "apply_metadata", refuse)
    assert run(["model", "inspect", str(minilm), "--apply", "basemodel/b", "-n", "a"]) == 1
    assert capsys.readouterr() == ("", "error: cannot patch BaseModel a/b: denied \\x1b[2J\\u202e\n")


# --- SPEC §10 (v5): quantization-aware counts and OME main's quantization values ---------------------------


def _nvfp4(folder: Path) -> Path:
    """A ModelOpt NVFP4 export in small: a packed U8 weight, its F8 weight_scale, a scalar weight_scale_2."""
    write_json(
        folder / "config.json", {"architectures": ["LlamaForCausalLM"], "transformers_version": "4.48.0"}
    )
    write_json(
        folder / "hf_quant_config.json",
        {
            "producer": {"name": "modelopt"},
            "quantization": {"quant_algo": "NVFP4", "exclude_modules": ["lm_head"]},
        },
    )
    tensors = {
        "model.layers.0.mlp.down_proj.weight": ("U8", [64, 32]),  # 2048 bytes: 4096 parameters
        "model.layers.0.mlp.down_proj.weight_scale": ("F8_E4M3", [64, 4]),  # not a parameter
        "model.layers.0.mlp.down_proj.weight_scale_2": ("F32", []),  # a scalar
        "lm_head.weight": ("BF16", [10, 64]),  # excluded, BF16: 640
    }
    write_safetensors(folder / "model.safetensors", tensors, {"format": "pt"})
    return folder


def test_json_says_the_count_is_quantization_aware(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _nvfp4(tmp_path)
    assert run(["model", "inspect", str(folder), "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "source": str(folder),
        "parameterCount": 4736,
        "estimated": False,
        "quantAware": True,
        "modelParameterSize": "4736",
        "modelFormat": {"name": "safetensors", "version": "1.0.0"},
        "modelArchitecture": "LlamaForCausalLM",
        "modelFramework": {"name": "transformers", "version": "4.48.0"},
        "quantization": "nvfp4",
        "maxTokens": None,
        "files": [{"name": "model.safetensors", "tensors": 4, "parameters": 4736, "quantAware": True}],
        "notes": [],
    }


def test_the_table_says_which_rule_counted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _nvfp4(tmp_path)
    assert run(["model", "inspect", str(folder)]) == 0
    assert capsys.readouterr().out == (
        f"Source:              {folder}\n"
        "Parameters:          4736 (exact, quantization-aware: packed 4-bit elements count every value they "
        "hold, scales and zero points not counted)\n"
        "modelParameterSize:  4736\n"
        "modelFormat:         safetensors 1.0.0\n"
        "modelArchitecture:   LlamaForCausalLM\n"
        "modelFramework:      transformers 4.48.0\n"
        "quantization:        nvfp4\n"
        "maxTokens:           -\n"
        "\n"
        "FILE                TENSORS   PARAMETERS   QUANTAWARE\n"
        "model.safetensors   4         4736         true\n"
    )
    # Without hf_quant_config.json the file says nothing of NVFP4: every stored element counts.
    os.remove(folder / "hf_quant_config.json")
    assert run(["model", "inspect", str(folder), "-o", "yaml"]) == 0
    document = yaml.safe_load(capsys.readouterr().out)
    assert (document["parameterCount"], document["quantAware"], document["quantization"]) == (
        2944,
        False,
        None,
    )


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b'{"quantization": {"quant_algo": "NVFP4"', "invalid JSON: "),
        (b"[" * 101 + b"]" * 101, "invalid JSON: nested deeper than 100 levels"),
        (b" " * 4_000_001, "larger than 4000000 bytes: not model metadata"),
    ],
)
def test_a_malformed_hf_quant_config_exits_1_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, reason: str
) -> None:
    folder = _nvfp4(tmp_path)
    (folder / "hf_quant_config.json").write_bytes(content)
    assert run(["model", "inspect", str(folder)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"error: {folder / 'hf_quant_config.json'}: {reason}")
    assert err.count("\n") == 1
    assert "Traceback" not in err
