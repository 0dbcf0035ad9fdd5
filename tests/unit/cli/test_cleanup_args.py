"""`ome-selector cleanup`'s arguments for the chart's pre-delete hook: parsed, or refused clearly."""

from __future__ import annotations

import pytest

from ome_selector.cli.ome_selector import _parser, main


def test_hook_arguments_parse() -> None:
    args = _parser().parse_args(
        [
            "cleanup",
            "--conditions-only",
            "--disarm-webhook=prod-ome-selector",
            "--stop-deployment=ops/prod",
            "--delete-lease=ops/prod",
            "-n",
            "a",
            "--namespace=b",
            "--timeout=30",
        ]
    )
    assert (args.conditions_only, args.stop_deployment, args.delete_lease) == (
        True,
        ("ops", "prod"),
        ("ops", "prod"),
    )
    assert (args.namespaces, args.timeout, args.disarm_webhook) == (["a", "b"], 30.0, "prod-ome-selector")
    plain = _parser().parse_args(["cleanup"])
    assert (
        plain.disarm_webhook,
        plain.stop_deployment,
        plain.delete_lease,
        plain.namespaces,
        plain.timeout,
    ) == (
        None,
        None,
        None,
        None,
        120.0,
    )


@pytest.mark.parametrize("value", ["prod", "/prod", "ops/", "ops/a/b"])
def test_a_name_without_its_namespace_is_refused(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        _parser().parse_args(["cleanup", f"--stop-deployment={value}"])
    assert exit_.value.code == 2
    assert f"argument --stop-deployment: expected NAMESPACE/NAME, got '{value}'" in capsys.readouterr().err


def test_conditions_only_excludes_the_local_registration_choices(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        _parser().parse_args(["cleanup", "--conditions-only", "--all-instances"])
    assert "not allowed with argument" in capsys.readouterr().err


def test_webhook_only_takes_no_hook_argument(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cleanup", "--webhook-only", "--stop-deployment=ops/prod"]) == 2
    assert capsys.readouterr().err == (
        "ome-selector cleanup: error: --webhook-only removes only local registrations; it takes none of "
        "--conditions-only, --disarm-webhook, --stop-deployment, --delete-lease\n"
    )


def test_webhook_only_takes_no_disarm(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cleanup", "--webhook-only", "--disarm-webhook=prod-ome-selector"]) == 2
    assert "--webhook-only removes only local registrations" in capsys.readouterr().err
