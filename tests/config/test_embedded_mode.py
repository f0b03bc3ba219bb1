"""The embedded default (scripts/_env.sh, as scripts/run, scripts/manage and
scripts/celery have it) runs with DEBUG off: an error anyone can cause serves the
product's page, never Django's traceback page with the settings and the process
environment (a password in the broker or database URL). It keeps its conveniences:
a secret key generated once under the var dir, plain http, static files from the
source tree, demo data."""

from __future__ import annotations

import hashlib
import os
import socket
import stat
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from config.staticfinders import VERSIONED
from procurement.models import Rfp
from tests.config.scripts_support import (  # noqa: F401 - the fixture
    MANAGE,
    PROJECT_DIR,
    _venv_up_to_date,
    bare_env,
    run_in_project,
)

# A password in a URL the embedded processes have in their environment: a debug
# page would print it (Django hides settings named *PASS*/*KEY*, not URLs).
CANARY = "canary-pw-4f1c9e"
BROKER_URL = f"redis://:{CANARY}@127.0.0.1:1/0"
SHOW = (
    "import hashlib; from django.conf import settings as s; "
    "print(s.DEBUG, s.REPROGATE_EMBEDDED, s.SECURE_SSL_REDIRECT, "
    "s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_HSTS_SECONDS, "
    "','.join(s.ALLOWED_HOSTS), s.STORAGES['staticfiles']['BACKEND'], "
    "hashlib.sha256(s.SECRET_KEY.encode()).hexdigest())"
)


def show(env: dict[str, str]) -> list[str]:
    result = run_in_project([str(MANAGE), "shell", "-v", "0", "-c", SHOW], env)
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def test_the_embedded_default_runs_without_debug_on_plain_http(
    tmp_path: Path,
) -> None:
    var_dir = tmp_path / "var"

    debug, embedded, redirect, session, csrf, hsts, hosts, storage, _ = show(
        bare_env(REPROGATE_VAR_DIR=str(var_dir))
    )

    assert (debug, embedded) == ("False", "True")
    assert (redirect, session, csrf, hsts) == ("False", "False", "False", "0")
    assert hosts == "127.0.0.1,localhost"
    assert storage == "config.staticfinders.StaticFilesStorage"  # no collectstatic


def test_its_secret_key_is_generated_once_private_to_the_user(
    tmp_path: Path,
) -> None:
    var_dir = tmp_path / "var"
    env = bare_env(REPROGATE_VAR_DIR=str(var_dir))

    first = show(env)[-1]
    key_file = var_dir / "secret-key"
    again = show(env)[-1]

    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert len(key_file.read_text().strip()) >= 50
    assert hashlib.sha256(key_file.read_text().strip().encode()).hexdigest() == first
    assert again == first
    assert [p.name for p in var_dir.iterdir() if "secret" in p.name] == ["secret-key"]
    other = show(bare_env(REPROGATE_VAR_DIR=str(tmp_path / "other")))[-1]
    assert other != first  # per installation, not a key known to everyone


def test_a_secret_key_the_caller_sets_wins_and_no_file_is_made(
    tmp_path: Path,
) -> None:
    var_dir = tmp_path / "var"
    key = "a-key-the-caller-chose-for-this-test-only-0123456789"

    result = show(bare_env(REPROGATE_VAR_DIR=str(var_dir), DJANGO_SECRET_KEY=key))

    assert result[-1] == hashlib.sha256(key.encode()).hexdigest()
    assert not (var_dir / "secret-key").exists()


def test_a_host_beyond_loopback_is_allowed_and_production_is_unchanged(
    tmp_path: Path,
) -> None:
    hosts = show(
        bare_env(REPROGATE_VAR_DIR=str(tmp_path / "var"), REPROGATE_HOST="10.1.2.3")
    )[6]
    production = show(
        bare_env(
            REPROGATE_VAR_DIR=str(tmp_path / "var"),
            REPROGATE_EMBEDDED="False",
            DJANGO_SECRET_KEY="insecure-key-for-the-test-suite-only",
            DJANGO_ALLOWED_HOSTS="reprogate.example.com",
        )
    )

    assert hosts == "127.0.0.1,localhost,10.1.2.3"
    assert production[:6] == ["False", "False", "True", "True", "True", "31536000"]
    assert production[7] == "config.staticfinders.CompressedManifestStaticFilesStorage"


# --- the web server of the embedded default --------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def fetch(
    url: str, headers: dict[str, str] | None = None, timeout: float = 10
) -> tuple[int, str, dict[str, str]]:
    """Status, body and headers of a GET, whatever the status."""
    request = urllib.request.Request(url, headers=headers or {})  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            return (
                response.status,
                response.read().decode(errors="replace"),
                dict(response.headers),
            )
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace"), dict(exc.headers)


def assert_no_debug_page(status: int, body: str) -> None:
    assert CANARY not in body, body[:3000]
    for debug_only in ("Traceback", "URLconf", "DJANGO_SETTINGS_MODULE", "META"):
        assert debug_only not in body, (status, debug_only, body[:3000])


@pytest.fixture(scope="module")
def embedded_web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``scripts/manage runserver`` with the embedded environment and a broker URL
    holding a password, on a var dir never migrated (as before the first start)."""
    tmp_path = tmp_path_factory.mktemp("embedded-web")
    port = _free_port()
    env = bare_env(
        REPROGATE_VAR_DIR=str(tmp_path / "var"),
        REPROGATE_PORT=str(port),
        CELERY_BROKER_URL=BROKER_URL,
        PYTHONUNBUFFERED="1",
    )
    log = (tmp_path / "web.log").open("wb")
    server = subprocess.Popen(
        [str(MANAGE), "runserver", "--noreload", "--skip-checks", f"127.0.0.1:{port}"],
        cwd=PROJECT_DIR,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            fetch(f"{base}/static/css/app.css", timeout=2)
            break
        except OSError:
            assert server.poll() is None, (tmp_path / "web.log").read_text()
            assert time.monotonic() < deadline, (tmp_path / "web.log").read_text()
            time.sleep(0.2)
    try:
        yield base
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def test_the_embedded_web_server_shows_no_debug_page(embedded_web: str) -> None:
    # A page that does not exist: DEBUG would list the URL configuration.
    status, body, _ = fetch(f"{embedded_web}/no-such-page/")
    assert status == 404
    assert "Not found" in body
    assert "app.css" in body
    assert_no_debug_page(status, body)

    # A Host header nobody configured: DEBUG would answer with the technical page
    # (settings and the whole request environment).
    status, body, _ = fetch(f"{embedded_web}/", headers={"Host": "attacker.example"})
    assert status == 400
    assert_no_debug_page(status, body)

    # A session cookie on a database without tables: an unhandled error, a 500.
    status, body, _ = fetch(
        f"{embedded_web}/no-such-page/", headers={"Cookie": "sessionid=" + "a" * 32}
    )
    assert status == 500
    assert "Something went wrong" in body
    assert_no_debug_page(status, body)


def test_the_embedded_web_server_serves_static_files_without_collectstatic(
    embedded_web: str,
) -> None:
    status, body, _ = fetch(f"{embedded_web}/static/css/app.css")
    assert status == 200
    assert "{" in body
    status, _, headers = fetch(
        f"{embedded_web}/static/{VERSIONED}", headers={"Accept-Encoding": "gzip"}
    )
    assert status == 200  # Plotly's charts
    assert headers["Content-Encoding"] == "gzip"

    status, _, headers = fetch(f"{embedded_web}/accounts/login/")
    assert status == 200
    assert "Secure" not in headers.get("Set-Cookie", "")  # plain http works


# --- demo data ---------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.django_db
def test_seed_demo_runs_in_the_embedded_default_without_debug(settings: Any) -> None:
    settings.DEBUG = False
    settings.REPROGATE_EMBEDDED = True

    call_command("seed_demo", stdout=open(os.devnull, "w"))  # noqa: SIM115

    assert Rfp.objects.filter(reference="RFP-DEMO-1").exists()
