"""The README's commands, and those of the documents written for a running
``scripts/run``, work as written on another port and var directory than the
defaults: one ``scripts/run`` is started (as the README says, with
``REPROGATE_PORT`` and ``REPROGATE_VAR_DIR`` exported), then every shell block of
each document runs in one shell with the ``export`` line that ``scripts/run``
printed, and must exit 0. A block after ``<!-- readme-test: skip (why) -->`` is not
run (it starts the product, or runs until Ctrl-C). RFP-DEMO-3 reaches its deadline
minutes after the start (here one) and two people open its bids."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from config.supervise import STOP_GRACE_S

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]

PROJECT_DIR = Path(__file__).resolve().parents[2]
# The documents whose commands are written for a running scripts/run.
DOCUMENTS = ["README.md", "docs/api-and-cli.md", "docs/configuration.md", "docs/lab.md"]
# What the commands write in the working copy (ignored by git), removed afterwards.
WRITTEN = [
    "acme.tar.gz",
    "evidence.zip",
    "submitted.txt",
    "response.json",
    "plan.json",
    "results.json",
    "report.pdf",
    "package.zip",
]
START_TIMEOUT_S = 480.0
LAB_TIMEOUT_S = 600.0  # RFP-DEMO-2's lab runs, after the start
TOOLS = ["bwrap", "pdfsig", "certutil", "curl", "ssh-keygen"]
SKIP = re.compile(r"<!-- readme-test: skip \([^)]+\) -->\n$")
BLOCK = re.compile(r"^```(sh|bash)\n(.*?)^```$", re.DOTALL | re.MULTILINE)
EXPORT = re.compile(r"==> commands in another shell reach this instance after: (.+)$")


def shell_blocks(text: str) -> list[str]:
    """The ``sh`` blocks of a Markdown text, less those marked to skip."""
    return [
        match.group(2)
        for match in BLOCK.finditer(text)
        if not SKIP.search(text[: match.start()])
    ]


def test_shell_blocks_leave_out_the_marked_ones() -> None:
    text = (
        "<!-- readme-test: skip (runs forever) -->\n```sh\nscripts/run\n```\n\n"
        "```sh\ncurl a\n```\n```python\nx = 1\n```\n```bash\necho b\n```\n"
    )

    assert shell_blocks(text) == ["curl a\n", "echo b\n"]


def test_every_document_has_commands_to_run() -> None:
    for name in DOCUMENTS:
        assert shell_blocks((PROJECT_DIR / name).read_text(encoding="utf-8")), name


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _status(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 (loopback)
            return int(response.status)
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return None


@dataclass
class Instance:
    port: int
    var_dir: Path
    env: dict[str, str]
    console: Path
    started_at: float  # time.time(), as file times
    answered: float  # time.monotonic()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def _bare_env(**extra: str) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("DJANGO_", "CELERY_", "DATABASE_", "REPROGATE_"))
    }
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def instance(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Instance]:
    if not (PROJECT_DIR / ".venv" / ".reprogate-installed").is_file():
        pytest.skip(".venv is not installed")
    # the demo's lab runs, and the documents' signed-report check
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        reason = f"the documents' commands need {', '.join(missing)}"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    folder = tmp_path_factory.mktemp("readme")
    port, var_dir = _free_port(), folder / "demo"
    env = _bare_env(
        REPROGATE_PORT=str(port),
        REPROGATE_VAR_DIR=str(var_dir),
        REPROGATE_DEMO_OPENING_MINUTES="1",
    )
    console = folder / "console.log"
    started, started_at = time.monotonic(), time.time()
    with console.open("wb") as out:
        process = subprocess.Popen(
            ["bash", "scripts/run"],
            cwd=PROJECT_DIR,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    before = {name for name in WRITTEN if (PROJECT_DIR / name).exists()}
    try:
        deadline = started + START_TIMEOUT_S
        while _status(f"http://127.0.0.1:{port}/accounts/login/") != 200:
            assert process.poll() is None, console.read_text(errors="replace")
            assert time.monotonic() < deadline, console.read_text(errors="replace")
            time.sleep(1)
        yield Instance(port, var_dir, env, console, started_at, time.monotonic())
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=STOP_GRACE_S + 10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
        for name in set(WRITTEN) - before:
            (PROJECT_DIR / name).unlink(missing_ok=True)


def _exported(instance: Instance) -> dict[str, str]:
    """The variables of the line scripts/run printed for other shells."""
    text = instance.console.read_text(errors="replace")
    lines = [m.group(1) for m in map(EXPORT.match, text.splitlines()) if m]
    assert lines, text
    assert lines[-1].startswith("export ")
    done = subprocess.run(
        ["bash", "-c", f"{lines[-1]}; env -0"],
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        check=True,
    )
    pairs = [entry.split("=", 1) for entry in done.stdout.decode().split("\0")]
    return {p[0]: p[1] for p in pairs if p[0].startswith("REPROGATE_")}


def _run_document(instance: Instance, name: str) -> subprocess.CompletedProcess[str]:
    blocks = shell_blocks((PROJECT_DIR / name).read_text(encoding="utf-8"))
    script = "set -eo pipefail\n" + "".join(
        f"echo '--- {name}, block {number}' >&2\n{block}"
        for number, block in enumerate(blocks, 1)
    )
    env = _bare_env(**_exported(instance))
    return subprocess.run(
        ["bash", "-c", script],
        cwd=PROJECT_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_scripts_run_prints_the_export_line_of_this_instance(
    instance: Instance,
) -> None:
    exported = _exported(instance)

    assert exported == {
        "REPROGATE_VAR_DIR": str(instance.var_dir),
        "REPROGATE_PORT": str(instance.port),
        "REPROGATE_URL": instance.url,
    }
    assert f"starting ReproGate at {instance.url} " in instance.console.read_text()


def test_the_readme_commands_work_on_another_port_and_var_dir(
    instance: Instance,
) -> None:
    done = _run_document(instance, "README.md")

    assert done.returncode == 0, done.stderr[-4000:]
    assert "vendor-a (" in done.stdout  # whoami with the token of the example
    assert "RFP-DEMO-1" in done.stdout  # the RFP list with the token


@pytest.fixture(scope="module")
def lab_evaluated(instance: Instance) -> None:
    """Wait until the lab's runs of RFP-DEMO-2 in the background after the first
    start have ended and both vendors' lab validation is evaluated (the gate board
    with the buyer's token), as a reader of docs/api-and-cli.md would."""
    buyer = {"username": "buyer", "password": "reprogate-demo"}
    token = _api(instance, "auth/token/", body=buyer)["token"]
    rfps = _api(instance, "rfps/", token)["results"]
    rfp = next(r for r in rfps if r["reference"] == "RFP-DEMO-2")
    deadline = time.monotonic() + LAB_TIMEOUT_S
    while True:
        board = _api(instance, f"rfps/{rfp['id']}/gate-board/", token)
        latest = [g["latest_evaluation"] for v in board["vendors"] for g in v["gates"]]
        if sum(e is not None for e in latest) >= 2:
            return
        assert time.monotonic() < deadline, instance.console.read_text()[-4000:]
        time.sleep(5)


def test_the_api_and_cli_commands_work_as_written(
    instance: Instance, lab_evaluated: None
) -> None:
    done = _run_document(instance, "docs/api-and-cli.md")

    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert "status: accepted" in done.stdout
    assert "Certificate is Trusted." in done.stdout
    default = PROJECT_DIR / "var" / "db.sqlite3"  # never a second database there
    assert not default.exists() or default.stat().st_mtime < instance.started_at


def test_the_configuration_and_lab_commands_work_as_written(
    instance: Instance,
) -> None:
    configuration = _run_document(instance, "docs/configuration.md")
    lab = _run_document(instance, "docs/lab.md")

    assert configuration.returncode == 0, configuration.stderr[-4000:]
    assert "auditor (" in configuration.stdout
    assert lab.returncode == 0, lab.stderr[-4000:]
    (joined,) = [x for x in lab.stdout.splitlines() if "REPROGATE_SERVER_URL=" in x]
    assert f"REPROGATE_SERVER_URL={instance.url}" in joined.replace("'", "")
    assert '"schema": "reprogate.lab-policy/v1"' in lab.stdout  # pool_policy printed
    assert ":8000" not in joined


def _api(
    instance: Instance, path: str, token: str = "", body: dict[str, Any] | None = None
) -> Any:
    request = urllib.request.Request(  # noqa: S310 (loopback)
        f"{instance.url}/api/v1/{path}",
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Content-Type": "application/json"}
        | ({"Authorization": f"Token {token}"} if token else {}),
    )
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
        return json.load(response)


def test_two_people_open_rfp_demo_3_once_its_deadline_passed(
    instance: Instance,
) -> None:
    tokens = {
        name: _api(
            instance,
            "auth/token/",
            body={"username": name, "password": "reprogate-demo"},
        )["token"]
        for name in ("buyer", "evaluator")
    }
    rfps = _api(instance, "rfps/", tokens["buyer"])["results"]
    rfp = next(r for r in rfps if r["reference"] == "RFP-DEMO-3")
    detail = _api(instance, f"rfps/{rfp['id']}/", tokens["buyer"])
    deadline = detail["submission_deadline"]
    # one minute after the seed, which ended before the login page answered
    wait = 65 - (time.monotonic() - instance.answered)
    if wait > 0:
        time.sleep(wait)

    _api(instance, f"rfps/{rfp['id']}/opening/request/", tokens["buyer"], body={})
    _api(instance, f"rfps/{rfp['id']}/opening/confirm/", tokens["evaluator"], body={})

    opened = _api(instance, f"rfps/{rfp['id']}/", tokens["buyer"])
    assert opened["status"] == "opened", (deadline, opened)
