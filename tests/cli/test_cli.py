from __future__ import annotations

from typing import Any

import pytest

from reprogate_cli.main import main
from tests.accounts.factories import PASSWORD

pytestmark = pytest.mark.django_db(transaction=True)


def test_login_then_whoami_against_a_live_server(
    live_server: Any, vendor_a: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.setenv("REPROGATE_PASSWORD", PASSWORD)

    assert main(["--url", live_server.url, "login", "--username", "vendor-a"]) == 0
    token = capsys.readouterr().out.strip()
    assert main(["--url", live_server.url, "whoami", "--token", token]) == 0

    assert capsys.readouterr().out.strip() == "vendor-a (vendor@acme-flash)"


def test_login_with_a_wrong_password_explains_and_exits_2(
    live_server: Any, vendor_a: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.setenv("REPROGATE_PASSWORD", "wrong")

    status = main(["--url", live_server.url, "login", "--username", "vendor-a"])

    assert status == 2
    assert "invalid_credentials" in capsys.readouterr().err


def test_unreachable_server_is_reported(capsys: Any) -> None:
    status = main(["--url", "http://127.0.0.1:9", "whoami", "--token", "x"])

    assert status == 2
    assert "cannot reach" in capsys.readouterr().err


def test_non_http_url_is_refused(capsys: Any) -> None:
    status = main(["--url", "file:///etc/passwd", "whoami", "--token", "x"])

    assert status == 2
    assert "http://" in capsys.readouterr().err
