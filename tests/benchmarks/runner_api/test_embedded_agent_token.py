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
from benchmarks.services.embedded_agent import EMBEDDED_HOST, embedded_agent_token
from benchmarks.services.host_tokens import HostTokenRefused, host_token_authenticate

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
