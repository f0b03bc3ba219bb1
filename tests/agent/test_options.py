"""The agent's environment: every problem is one line naming the variable, and
the process exits 2 before it talks to anyone."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from reprogate_agent.options import OptionsError, read_options
from tests.architecture.imports import ROOT

TOKEN = "rgh_" + "a" * 43
BROKER = "amqp://pool-gpu:secret@127.0.0.1:5672/lab"


def good(tmp_path: Path, **changes: str) -> dict[str, str]:
    env = {
        "REPROGATE_SERVER_URL": "https://reprogate.example.com/",
        "REPROGATE_HOST_TOKEN": TOKEN,
        "REPROGATE_BROKER_URL": BROKER,
        "REPROGATE_AGENT_WORK_DIR": str(tmp_path / "work"),
        "REPROGATE_AGENT_NAME": "lab-07",
    }
    env.update(changes)
    return {k: v for k, v in env.items() if v != "-"}


def test_a_good_environment_is_read(tmp_path: Path) -> None:
    options = read_options(good(tmp_path))

    assert options.server_url == "https://reprogate.example.com"
    assert options.token == TOKEN
    assert options.node_name.startswith("lab-07@")
    assert options.work_dir == (tmp_path / "work").resolve()
    assert options.work_dir.is_dir()
    assert TOKEN not in repr(options)
    assert "secret" not in repr(options)


def test_the_embedded_broker_is_a_sqlite_file_on_this_machine(tmp_path: Path) -> None:
    url = f"sqla+sqlite:///{tmp_path / 'broker.sqlite3'}"

    options = read_options(good(tmp_path, REPROGATE_BROKER_URL=url))

    assert options.broker_url == url


def test_secrets_may_come_from_files(tmp_path: Path) -> None:
    (tmp_path / "token").write_text(TOKEN + "\n")
    (tmp_path / "broker").write_text(BROKER + "\n")
    env = good(
        tmp_path,
        REPROGATE_HOST_TOKEN="-",
        REPROGATE_BROKER_URL="-",
        REPROGATE_HOST_TOKEN_FILE=str(tmp_path / "token"),
        REPROGATE_BROKER_URL_FILE=str(tmp_path / "broker"),
    )

    options = read_options(env)

    assert (options.token, options.broker_url) == (TOKEN, BROKER)


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"REPROGATE_SERVER_URL": "-"}, "REPROGATE_SERVER_URL is not set"),
        ({"REPROGATE_SERVER_URL": "ftp://x.example"}, "REPROGATE_SERVER_URL"),
        ({"REPROGATE_SERVER_URL": "http://reprogate.example.com"}, "plain HTTP"),
        ({"REPROGATE_SERVER_URL": "https://u:p@x.example"}, "credentials"),
        ({"REPROGATE_HOST_TOKEN": "-"}, "REPROGATE_HOST_TOKEN (or"),
        ({"REPROGATE_HOST_TOKEN": "hunter2"}, "not a host token"),
        ({"REPROGATE_HOST_TOKEN_FILE": "/nonexistent"}, "not both"),
        ({"REPROGATE_BROKER_URL": "-"}, "REPROGATE_BROKER_URL (or"),
        ({"REPROGATE_BROKER_URL": "mysql://x"}, "REPROGATE_BROKER_URL"),
        ({"REPROGATE_BROKER_URL": "sqla+sqlite://host/x.db"}, "SQLite file"),
        ({"REPROGATE_BROKER_URL": "sqla+sqlite:///"}, "SQLite file"),
        ({"REPROGATE_CA_FILE": "/nonexistent/ca.pem"}, "REPROGATE_CA_FILE"),
        ({"REPROGATE_AGENT_NAME": "lab 07; rm"}, "REPROGATE_AGENT_NAME"),
        ({"REPROGATE_AGENT_WORK_DIR": "/proc/nope/work"}, "REPROGATE_AGENT_WORK_DIR"),
    ],
)  # fmt: skip
def test_each_bad_variable_is_named(
    tmp_path: Path, changes: dict[str, str], named: str
) -> None:
    with pytest.raises(OptionsError) as caught:
        read_options(good(tmp_path, **changes))

    assert named in str(caught.value)


def test_an_unreadable_or_empty_secret_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "empty").write_text("\n")
    for file, says in ((tmp_path / "empty", "is empty"), (tmp_path, "cannot read")):
        env = good(
            tmp_path, REPROGATE_HOST_TOKEN="-", REPROGATE_HOST_TOKEN_FILE=str(file)
        )
        with pytest.raises(OptionsError) as caught:
            read_options(env)
        assert "REPROGATE_HOST_TOKEN_FILE" in str(caught.value)
        assert says in str(caught.value)


def test_the_agent_exits_2_with_one_line_before_talking_to_anyone(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "reprogate_agent"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT),
             "REPROGATE_HOST_TOKEN": TOKEN, "REPROGATE_BROKER_URL": BROKER},
    )  # fmt: skip

    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "reprogate-agent: REPROGATE_SERVER_URL is not set (https://your-server)."
    ]
    assert not (tmp_path / "work").exists()
