"""The embedded default's lab agent gets a fresh host token at each start
(``manage.py embedded_agent_token``): pool ``local`` made if missing, the
previous start's token revoked, the new one in a file only its user reads."""

from __future__ import annotations

import io
import stat
from pathlib import Path

import pytest
from django.core.management import call_command

from accounts.models import AuditEvent, Organisation
from benchmarks.models import HostToken, LabPool
from benchmarks.services.embedded_agent import (
    EMBEDDED_HOST,
    embedded_agent_policy,
    embedded_agent_token,
)
from benchmarks.services.host_tokens import HostTokenRefused, host_token_authenticate
from benchmarks.services.pools import pool_policy_set

pytestmark = pytest.mark.django_db


def test_a_missing_pool_is_made_for_a_lab_and_its_token_authenticates() -> None:
    issued, revoked = embedded_agent_token()

    pool = LabPool.objects.get(name="local")
    assert pool.lab_organisation.kind == Organisation.Kind.LAB
    assert revoked == []
    assert host_token_authenticate(issued.raw).pk == issued.token.pk
    assert issued.token.name == EMBEDDED_HOST


def test_each_start_revokes_the_previous_start_s_token() -> None:
    first, _ = embedded_agent_token()
    second, revoked = embedded_agent_token()

    assert [t.pk for t in revoked] == [first.token.pk]
    with pytest.raises(HostTokenRefused, match="revoked"):
        host_token_authenticate(first.raw)
    assert host_token_authenticate(second.raw).pk == second.token.pk
    assert HostToken.objects.filter(revoked_at=None).count() == 1
    assert AuditEvent.objects.filter(action="host_token.revoked").count() == 1
    assert AuditEvent.objects.filter(action="host_token.issued").count() == 2


def test_the_command_writes_the_token_to_a_0600_file_and_prints_no_secret(
    tmp_path: Path,
) -> None:
    path = tmp_path / "var" / "lab-agent" / "host-token"
    out = io.StringIO()

    call_command("embedded_agent_token", f"--token-file={path}", stdout=out)

    raw = path.read_text(encoding="utf-8").strip()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert host_token_authenticate(raw).pool.name == "local"
    assert raw not in out.getvalue()
    assert raw[:12] in out.getvalue()  # the prefix names it
    assert [p.name for p in path.parent.iterdir()] == ["host-token"]  # no scratch


def test_a_bad_pool_name_is_one_line_and_exit_2(tmp_path: Path) -> None:
    from django.core.management.base import CommandError

    with pytest.raises(CommandError) as caught:
        call_command(
            "embedded_agent_token",
            f"--token-file={tmp_path / 't'}",
            "--pool=Not A Pool",
        )

    assert caught.value.returncode == 2
    assert not (tmp_path / "t").exists()


SCRATCH = {"name": "reprogate.dev/block=scratch0", "access": "rw"}


def _policy_events() -> int:
    return AuditEvent.objects.filter(action="lab_pool.policy_set").count()


def test_the_scratch_device_enters_the_pool_s_policy_once_audited() -> None:
    embedded_agent_policy(scratch_device=SCRATCH["name"])
    pool = embedded_agent_policy(scratch_device=SCRATCH["name"])  # the next start

    assert pool.policy == {"schema": "reprogate.lab-policy/v1", "devices": [SCRATCH]}
    assert _policy_events() == 1


def test_without_the_device_it_leaves_the_policy_and_the_operator_s_entries_stay() -> (
    None
):
    gpu = {"name": "nvidia.com/gpu=0", "access": "rw"}
    pool = embedded_agent_policy(scratch_device=SCRATCH["name"])
    pool_policy_set(
        pool=pool,
        policy={**pool.policy, "devices": [SCRATCH, gpu]},
        actor=None,
    )

    pool = embedded_agent_policy(scratch_device=None)

    assert pool.policy["devices"] == [gpu]
    assert _policy_events() == 3


def test_a_pool_without_policy_and_a_host_without_device_is_not_written() -> None:
    pool = embedded_agent_policy(scratch_device=None)

    assert pool.policy in ({}, None)
    assert _policy_events() == 0


def test_the_command_s_flag_sets_the_device_and_its_absence_takes_it_out(
    tmp_path: Path,
) -> None:
    path = tmp_path / "host-token"
    flag = "--scratch-device=reprogate.dev/block=scratch0"

    call_command("embedded_agent_token", f"--token-file={path}", flag)
    assert LabPool.objects.get(name="local").policy["devices"] == [SCRATCH]
    call_command("embedded_agent_token", f"--token-file={path}")
    assert LabPool.objects.get(name="local").policy["devices"] == []
