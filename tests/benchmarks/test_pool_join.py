"""The pool commands: ``pool_join`` prints the agent's command once (the token
it holds works, nothing stores it), ``pool_revoke`` ends it, ``pool_hosts``
lists tokens and hosts; mistakes end with exit code 2 and say what to do."""

from __future__ import annotations

# ruff: noqa: F811 - the fixtures come from tests.benchmarks.host_support
import shlex
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, ManagementUtility, call_command

from accounts.models import AuditEvent
from benchmarks.models import HostToken, LabPool
from benchmarks.services.host_tokens import HostTokenRefused, host_token_authenticate
from tests.benchmarks.host_support import (  # noqa: F401 (fixtures)
    lab_org,
    pool,
    register_with,
)

pytestmark = pytest.mark.django_db


def _run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture(autouse=True)
def _urls(settings: Any) -> None:
    settings.REPROGATE_PUBLIC_URL = "https://reprogate.example.com"
    settings.REPROGATE_AGENT_BROKER_URL = "amqp://pool-{pool}@mq.example.com/rg"


def _token_of(command: str) -> str:
    words = dict(w.split("=", 1) for w in shlex.split(command) if "=" in w)
    return words["REPROGATE_HOST_TOKEN"]


def test_pool_join_prints_the_agent_command_once(pool: LabPool) -> None:
    out, err = _run("pool_join", "gpu-a", "lab-07")

    [command] = out.splitlines()
    assert command.startswith("REPROGATE_SERVER_URL=https://reprogate.example.com ")
    assert (
        " REPROGATE_BROKER_URL=amqp://pool-gpu-a:BROKER-PASSWORD@mq.example.com/rg "
        in command
    )
    assert command.endswith(" python -m reprogate_agent")
    token = host_token_authenticate(_token_of(command))
    assert (token.pool, token.name, token.created_by) == (pool, "lab-07", None)
    assert "BROKER-PASSWORD" in err
    assert "not shown again" in err
    assert _token_of(command) not in str(list(AuditEvent.objects.values()))


def test_pool_join_refuses_a_name_already_holding_a_token(pool: LabPool) -> None:
    _run("pool_join", "gpu-a", "lab-07")

    with pytest.raises(CommandError, match="holds a token") as caught:
        _run("pool_join", "gpu-a", "lab-07")

    assert caught.value.returncode == 2
    assert HostToken.objects.count() == 1


@pytest.mark.parametrize("command", ["pool_join", "pool_revoke"])
def test_pool_commands_refuse_an_unknown_pool(pool: LabPool, command: str) -> None:
    with pytest.raises(CommandError, match=r"No pool named 'gpu-b' \(pools: gpu-a\)"):
        _run(command, "gpu-b", "lab-07")

    assert not HostToken.objects.exists()


def test_pool_join_refuses_a_blank_name(pool: LabPool) -> None:
    with pytest.raises(CommandError, match="Name the host") as caught:
        _run("pool_join", "gpu-a", "  ")

    assert caught.value.returncode == 2


def test_pool_revoke_refuses_the_agent(pool: LabPool) -> None:
    out, _ = _run("pool_join", "gpu-a", "lab-07")
    raw = _token_of(out)

    revoked, _ = _run("pool_revoke", "gpu-a", "lab-07")

    assert f"Revoked the token {raw[:12]}… of lab-07 on gpu-a." in revoked
    with pytest.raises(HostTokenRefused, match="revoked"):
        host_token_authenticate(raw)
    assert AuditEvent.objects.filter(action="host_token.revoked").count() == 1


def test_pool_revoke_refuses_a_host_without_an_active_token(pool: LabPool) -> None:
    _run("pool_join", "gpu-a", "lab-07")
    _run("pool_revoke", "gpu-a", "lab-07")

    with pytest.raises(CommandError, match="pool_hosts gpu-a") as caught:
        _run("pool_revoke", "gpu-a", "lab-07")

    assert caught.value.returncode == 2


def test_pool_hosts_lists_tokens_and_hosts_with_their_status(pool: LabPool) -> None:
    _run("pool_join", "gpu-a", "lab-07")
    _run("pool_join", "gpu-a", "lab-08")
    register_with(HostToken.objects.get(name="lab-07"))
    _run("pool_revoke", "gpu-a", "lab-08")

    out, _ = _run("pool_hosts", "gpu-a")

    lines = out.splitlines()
    assert lines[:2] == ["pool gpu-a (queue pool.gpu-a)", "tokens: 2"]
    assert "lab-07" in lines[2]
    assert "active" in lines[2]
    assert "lab-08" in lines[3]
    assert "revoked" in lines[3]
    assert lines[4] == "hosts: 1"
    assert "lab-07@host-7" in lines[5]
    assert "online" in lines[5]
    assert "token lab-07" in lines[5]


def test_pool_hosts_tells_how_to_join_an_empty_pool(pool: LabPool) -> None:
    out, _ = _run("pool_hosts", "gpu-a")

    assert "Join a host: manage.py pool_join gpu-a <host>" in out


def test_pool_join_exits_with_2_as_manage_py(
    pool: LabPool, capsys: pytest.CaptureFixture[str]
) -> None:
    """What an operator's script sees: exit code 2, the reason on stderr."""
    utility = ManagementUtility(["manage.py", "pool_join", "nowhere", "lab-07"])

    with pytest.raises(SystemExit) as exited:
        utility.execute()

    assert exited.value.code == 2
    captured = capsys.readouterr()
    assert "No pool named 'nowhere'" in captured.err
    assert captured.out == ""
