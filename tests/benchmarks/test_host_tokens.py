"""Host tokens: issued once per host name and pool, known only by their digest,
refused once revoked; issuing and revoking are audited, the token never is."""

# ruff: noqa: F811 - the fixtures come from tests.benchmarks.host_support

from __future__ import annotations

import shlex
from typing import Any

import pytest

from accounts.models import AuditEvent, Organisation
from accounts.services.users import token_digest
from benchmarks.models import HostToken, LabHost, LabPool
from benchmarks.services.common import RunnerConflict, RunnerError
from benchmarks.services.host_join import agent_command, host_join
from benchmarks.services.host_tokens import (
    HostTokenRefused,
    host_token_authenticate,
    host_token_issue,
    host_token_revoke,
)
from tests.benchmarks.host_support import (  # noqa: F401 (fixtures)
    lab_org,
    other_lab,
    other_pool,
    pool,
    register_with,
)

pytestmark = pytest.mark.django_db


def test_issue_keeps_only_the_digest(pool: LabPool, labops: Any) -> None:
    issued = host_token_issue(pool=pool, name=" lab-07 ", actor=labops)

    token = HostToken.objects.get()
    assert issued.raw.startswith("rgh_")
    assert len(issued.raw) > 40
    assert token.name == "lab-07"
    assert token.created_by == labops
    assert token.prefix == issued.raw[:12]
    assert token.digest == token_digest(issued.raw) != issued.raw
    assert issued.raw not in {token.prefix, token.digest, token.name}


def test_issue_is_audited_without_the_token(
    pool: LabPool, labops: Any, lab_org: Organisation
) -> None:
    issued = host_token_issue(pool=pool, name="lab-07", actor=labops)

    event = AuditEvent.objects.get(action="host_token.issued")
    assert event.organisation == lab_org
    assert event.actor == labops
    assert event.data == {"pool": "gpu-a", "host": "lab-07", "prefix": issued.raw[:12]}
    assert issued.raw not in str(event.data) + event.target_repr


@pytest.mark.parametrize("name", ["", "   ", "x" * 101])
def test_issue_refuses_an_unfit_name(pool: LabPool, name: str) -> None:
    with pytest.raises(RunnerError) as caught:
        host_token_issue(pool=pool, name=name, actor=None)

    assert caught.value.code == "host_name_invalid"
    assert not HostToken.objects.exists()


def test_issue_refuses_a_second_active_token_for_a_name(pool: LabPool) -> None:
    host_token_issue(pool=pool, name="lab-07", actor=None)

    with pytest.raises(RunnerConflict) as caught:
        host_token_issue(pool=pool, name="lab-07", actor=None)

    assert caught.value.code == "host_token_exists"
    assert HostToken.objects.count() == 1
    assert AuditEvent.objects.filter(action="host_token.issued").count() == 1


def test_the_same_name_may_join_another_pool(
    pool: LabPool, other_pool: LabPool
) -> None:
    host_token_issue(pool=pool, name="lab-07", actor=None)

    host_token_issue(pool=other_pool, name="lab-07", actor=None)

    assert HostToken.objects.filter(name="lab-07").count() == 2


def test_authenticate_knows_the_token_and_its_pool(pool: LabPool, clock: Any) -> None:
    issued = host_token_issue(pool=pool, name="lab-07", actor=None)

    token = host_token_authenticate(issued.raw)

    assert token.pk == issued.token.pk
    assert token.pool == pool
    token.refresh_from_db()
    assert token.last_used_at == clock.now()


@pytest.mark.parametrize("raw", ["", "rgp_abc", "rgh_", "rgh_unknown-token-value"])
def test_authenticate_refuses_what_is_not_an_issued_token(
    pool: LabPool, raw: str
) -> None:
    host_token_issue(pool=pool, name="lab-07", actor=None)

    with pytest.raises(HostTokenRefused):
        host_token_authenticate(raw)


def test_revoke_refuses_the_agent_and_stops_its_hosts(
    pool: LabPool, labops: Any, clock: Any
) -> None:
    issued = host_token_issue(pool=pool, name="lab-07", actor=labops)
    host = register_with(issued.token)
    clock.advance(minutes=1)

    host_token_revoke(token=issued.token, actor=labops)

    token, host = HostToken.objects.get(), LabHost.objects.get(pk=host.pk)
    assert token.revoked_at == clock.now()
    assert token.revoked_by == labops
    assert host.stopped_at == clock.now()
    with pytest.raises(HostTokenRefused, match="revoked"):
        host_token_authenticate(issued.raw)


def test_revoke_is_audited_once(
    pool: LabPool, labops: Any, lab_org: Organisation
) -> None:
    issued = host_token_issue(pool=pool, name="lab-07", actor=labops)
    host_token_revoke(token=issued.token, actor=labops)

    with pytest.raises(RunnerConflict):
        host_token_revoke(token=issued.token, actor=labops)

    [event] = AuditEvent.objects.filter(action="host_token.revoked")
    assert event.organisation == lab_org
    assert event.actor == labops
    assert event.data["host"] == "lab-07"
    assert issued.raw not in str(event.data)


def test_a_revoked_name_may_join_again_with_a_new_token(pool: LabPool) -> None:
    first = host_token_issue(pool=pool, name="lab-07", actor=None)
    host_token_revoke(token=first.token, actor=None)

    again = host_token_issue(pool=pool, name="lab-07", actor=None)

    assert host_token_authenticate(again.raw).pk == again.token.pk
    with pytest.raises(HostTokenRefused):
        host_token_authenticate(first.raw)


def _variables(command: str) -> dict[str, str]:
    words = shlex.split(command)
    assert words[-3:] == ["python", "-m", "reprogate_agent"]
    return dict(word.split("=", 1) for word in words[:-3])


def test_host_join_command_names_the_server_the_pool_broker_and_the_token(
    pool: LabPool, settings: Any
) -> None:
    settings.REPROGATE_PUBLIC_URL = "https://reprogate.example.com/"
    settings.REPROGATE_AGENT_BROKER_URL = (
        "amqp://pool-{pool}@broker.example.com:5672/reprogate"
    )

    joined = host_join(pool=pool, name="lab-07", actor=None)

    variables = _variables(joined.command)
    assert variables == {
        "REPROGATE_SERVER_URL": "https://reprogate.example.com",
        "REPROGATE_BROKER_URL": (
            "amqp://pool-gpu-a:BROKER-PASSWORD@broker.example.com:5672/reprogate"
        ),
        "REPROGATE_HOST_TOKEN": variables["REPROGATE_HOST_TOKEN"],
    }
    assert host_token_authenticate(variables["REPROGATE_HOST_TOKEN"]) == joined.token
    assert joined.broker_configured


def test_host_join_command_never_repeats_a_broker_password(
    pool: LabPool, settings: Any
) -> None:
    settings.REPROGATE_AGENT_BROKER_URL = "amqp://pool-{pool}:s3cret@mq:5672/rg"

    command = agent_command(pool, "rgh_x")

    assert "s3cret" not in command
    assert _variables(command)["REPROGATE_BROKER_URL"] == (
        "amqp://pool-gpu-a:BROKER-PASSWORD@mq:5672/rg"
    )


def test_host_join_command_without_settings_leaves_placeholders(
    pool: LabPool, settings: Any
) -> None:
    settings.REPROGATE_PUBLIC_URL = ""
    settings.REPROGATE_AGENT_BROKER_URL = ""
    settings.REPROGATE_SITE_URL = "https://site.example.org"

    joined = host_join(pool=pool, name="lab-07", actor=None)

    variables = _variables(joined.command)
    assert variables["REPROGATE_SERVER_URL"] == "https://site.example.org"
    assert variables["REPROGATE_BROKER_URL"] == (
        "amqp://pool-gpu-a:BROKER-PASSWORD@BROKER-HOST:5672/reprogate"
    )
    assert not joined.broker_configured
