"""Which server the CLI talks to, and what ``reprogate --help`` says."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reprogate_cli import main as cli
from reprogate_cli import submit
from reprogate_cli.main import DEFAULT_URL, build_parser, main


@pytest.fixture(autouse=True)
def _no_url_in_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REPROGATE_URL", raising=False)


@pytest.fixture
def requests(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The server URL of every API call the CLI makes (none leaves the test)."""
    seen: list[str] = []

    def fake_request(url: str, path: str, **kwargs: Any) -> dict[str, Any]:
        seen.append(url)
        return {
            "token": "t0ken",
            "expires_at": "2027-01-01T00:00:00Z",
            "username": "vendor-a",
            "memberships": [],
        }

    monkeypatch.setattr(cli, "_request", fake_request)
    monkeypatch.setenv("REPROGATE_PASSWORD", "reprogate-demo")
    return seen


def test_the_default_server_is_where_scripts_run_serves() -> None:
    assert DEFAULT_URL == "http://127.0.0.1:8000"
    for argv in (
        ["login", "--username", "vendor-a"],
        ["whoami"],
        ["submit", "x.tar.gz", "--rfp", "RFP-DEMO-1"],
    ):
        assert build_parser().parse_args(argv).url == DEFAULT_URL


def test_reprogate_url_from_the_environment_is_the_default(
    monkeypatch: pytest.MonkeyPatch, requests: list[str]
) -> None:
    monkeypatch.setenv("REPROGATE_URL", "http://127.0.0.1:8140")

    assert main(["login", "--username", "vendor-a"]) == 0

    assert requests == ["http://127.0.0.1:8140"]


@pytest.mark.parametrize(
    "argv",
    [
        ["login", "--username", "vendor-a", "--url", "http://127.0.0.1:8140"],
        ["--url", "http://127.0.0.1:8140", "login", "--username", "vendor-a"],
        ["whoami", "--token", "t0ken", "--url", "http://127.0.0.1:8140"],
        ["--url", "http://127.0.0.1:9", "login", "--username", "vendor-a", "--url",
         "http://127.0.0.1:8140"],
    ],
)  # fmt: skip
def test_url_may_follow_the_command(argv: list[str], requests: list[str]) -> None:
    assert main(argv) == 0

    assert requests == ["http://127.0.0.1:8140"]


def test_login_without_url_goes_to_the_default_server(
    requests: list[str], capsys: Any
) -> None:
    assert main(["login", "--username", "vendor-a"]) == 0

    assert requests == [DEFAULT_URL]
    assert capsys.readouterr().out == "t0ken\n"


def test_submit_without_url_goes_to_the_default_server(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bundle = tmp_path / "acme.tar.gz"
    bundle.write_bytes(b"not really a bundle")
    seen: dict[str, str] = {}

    def fake_submit(file: Path, *, url: str, token: str, rfp: str) -> Any:
        seen.update(url=url, token=token, rfp=rfp)
        raise submit.SubmitError("stop here")

    monkeypatch.setattr(submit, "submit", fake_submit)

    status = main(["submit", str(bundle), "--token", "t0ken", "--rfp", "RFP-DEMO-1"])

    assert status == 2
    assert seen == {"url": DEFAULT_URL, "token": "t0ken", "rfp": "RFP-DEMO-1"}


def test_help_describes_the_commands_and_no_plans(capsys: Any) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])

    out = capsys.readouterr().out
    assert exit_info.value.code == 0
    assert "issue" not in out.lower()
    assert "later" not in out.lower()
    for command in ("login", "bundle build", "submit", "evidence verify", "parse"):
        assert command in out
    assert f"$REPROGATE_URL, else {DEFAULT_URL}" in out
