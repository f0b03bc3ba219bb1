"""``reprogate key register`` and ``examples/build.sh --register`` against a live
server: docs/api-and-cli.md's vendor walk-through (build, verify, submit) ends in an
accepted bundle because the keys that signed it are registered first."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from accounts.models import Organisation
from accounts.services.users import api_token_issue
from artifacts.models import Bundle, SigningKey
from artifacts.services.keys import signing_key_revoke
from reprogate_cli.main import main
from tests.accounts.factories import PASSWORD
from tests.artifacts.ingest_support import open_rfp

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def public_key(tmp_path: Path) -> Path:
    key = tmp_path / "signer"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ci@acme", "-f", key],
        check=True,
    )
    return key.with_suffix(".pub")


def _register(live_server: Any, public_key: Path, token: str) -> int:
    argv = ["key", "register", str(public_key), "--token", token]
    return main([*argv, "--url", live_server.url])


def test_key_register_registers_once_and_says_so_again(
    live_server: Any, vendor_a: Any, vendor_a_org: Organisation, public_key: Path,
    capsys: Any,
) -> None:  # fmt: skip
    token = api_token_issue(user=vendor_a, name="ci")[1]

    first = _register(live_server, public_key, token)
    again = _register(live_server, public_key, token)

    out = capsys.readouterr().out.splitlines()
    (key,) = SigningKey.objects.filter(organisation=vendor_a_org)
    assert (first, again) == (0, 0)
    assert out == [
        f"registered {key.fingerprint} (acme-flash)",
        f"already registered {key.fingerprint} (acme-flash)",
    ]
    assert key.comment == "ci@acme"


def test_key_register_refuses_a_revoked_key_and_a_bad_file(
    live_server: Any, vendor_a: Any, vendor_a_org: Organisation, public_key: Path,
    tmp_path: Path, capsys: Any,
) -> None:  # fmt: skip
    token = api_token_issue(user=vendor_a, name="ci")[1]
    assert _register(live_server, public_key, token) == 0
    signing_key_revoke(key=SigningKey.objects.get(), actor=vendor_a)
    garbage = tmp_path / "garbage.pub"
    garbage.write_text("ssh-ed25519 not-base64 x\n")
    capsys.readouterr()

    revoked = _register(live_server, public_key, token)
    revoked_err = capsys.readouterr().err
    bad = _register(live_server, garbage, token)
    bad_err = capsys.readouterr().err
    missing = _register(live_server, tmp_path / "absent.pub", token)

    assert (revoked, bad, missing) == (2, 2, 2)
    assert "key_duplicate" in revoked_err
    assert "public_key" in bad_err
    assert SigningKey.objects.count() == 1


def test_key_register_needs_a_token(
    public_key: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.delenv("REPROGATE_TOKEN", raising=False)

    assert main(["key", "register", str(public_key)]) == 2
    assert "REPROGATE_TOKEN" in capsys.readouterr().err


def _build(*args: str, url: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "REPROGATE_URL": url, "REPROGATE_PASSWORD": PASSWORD}
    return subprocess.run(
        ["bash", str(ROOT / "examples" / "build.sh"), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )


def test_build_sh_register_makes_the_walk_through_end_in_an_accepted_bundle(
    live_server: Any, vendor_a: Any, vendor_b: Any, vendor_a_org: Organisation,
    vendor_b_org: Organisation, buyer_org: Organisation, tmp_path: Path,
) -> None:  # fmt: skip
    open_rfp(vendor_a_org, vendor_b_org, reference="RFP-DEMO-1", buyer=buyer_org)
    bundles, keys = tmp_path / "bundles", tmp_path / "keys"

    built = _build("--register", str(bundles), str(keys), url=live_server.url)
    again = _build("--register", str(bundles), str(keys), url=live_server.url)

    assert built.returncode == 0, built.stderr
    assert again.returncode == 0, again.stderr
    assert "already registered" in again.stderr
    printed = dict(line.split(" ", 1) for line in built.stdout.splitlines())
    assert set(printed) == {"acme-flash", "bolt-storage"}  # stdout as without it
    for org in (vendor_a_org, vendor_b_org):
        (key,) = SigningKey.objects.filter(organisation=org)
        assert printed[org.slug].startswith(key.public_key)
    token = api_token_issue(user=vendor_a, name="walk-through")[1]
    status = main(
        ["submit", str(bundles / "acme-flash.tar.gz"), "--url", live_server.url,
         "--token", token, "--rfp", "RFP-DEMO-1"]
    )  # fmt: skip
    assert status == 0
    assert Bundle.objects.get().status == Bundle.Status.ACCEPTED


def test_build_sh_register_needs_a_key_folder_and_a_server(tmp_path: Path) -> None:
    no_keydir = _build("--register", str(tmp_path / "out"), url="http://127.0.0.1:9")
    no_server = _build(
        "--register", str(tmp_path / "out"), str(tmp_path / "keys"),
        url="http://127.0.0.1:9",
    )  # fmt: skip

    assert no_keydir.returncode == 2
    assert "--register needs KEYDIR" in no_keydir.stderr
    assert no_server.returncode == 2
    assert "cannot reach http://127.0.0.1:9" in no_server.stderr
    assert "is scripts/run running" in no_server.stderr
