"""The embedded default's fault export: where nbdkit is installed the
supervisor serves it and the token command names its hook and (for an agent
running as root) its endpoint ``demo-nbd`` in pool ``local``'s policy, once,
audited; a start without it takes them out, an operator's own hook stays."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from accounts.models import AuditEvent
from benchmarks.lib.lab.nbd_fault import (
    ERROR_FILE,
    FAULT_ENDPOINT,
    IMAGE,
    fault_export_prepare,
)
from benchmarks.services.embedded_agent import embedded_agent_policy
from benchmarks.services.pools import pool_policy_set
from config import supervise

pytestmark = pytest.mark.django_db
ENDPOINT = "tcp:127.0.0.1:10809"
HOOK = "/var/lib/reprogate/lab/hooks/fault"


def _policy_events() -> int:
    return AuditEvent.objects.filter(action="lab_pool.policy_set").count()


def test_the_fault_endpoint_and_hook_enter_the_policy_once() -> None:
    embedded_agent_policy(scratch_device=None, fault_endpoint=ENDPOINT, fault_hook=HOOK)
    pool = embedded_agent_policy(
        scratch_device=None, fault_endpoint=ENDPOINT, fault_hook=HOOK
    )

    assert pool.policy == {
        "schema": "reprogate.lab-policy/v1",
        "endpoints": [{"name": FAULT_ENDPOINT, "address": ENDPOINT}],
        "hooks": {"fault": HOOK},
    }
    assert _policy_events() == 1


def test_a_start_without_the_export_takes_them_out_and_keeps_the_operator_s() -> None:
    pool = embedded_agent_policy(
        scratch_device=None, fault_endpoint=ENDPOINT, fault_hook=HOOK
    )
    kv = {"name": "kv-tier", "address": "tcp:10.0.0.5:4420"}
    switch = "/usr/local/lib/reprogate/switch"
    pool_policy_set(
        pool=pool,
        policy={
            **pool.policy,
            "endpoints": [*pool.policy["endpoints"], kv],
            "hooks": {"fault": HOOK, "rollback": switch},
        },
        actor=None,
    )

    pool = embedded_agent_policy(scratch_device=None)

    assert pool.policy["endpoints"] == [kv]
    assert pool.policy["hooks"] == {"rollback": switch}


def test_an_operator_s_own_fault_hook_is_left_alone() -> None:
    pool = embedded_agent_policy(scratch_device=None)
    own = "/opt/lab/bin/dm-flakey-hook"
    policy = {"schema": "reprogate.lab-policy/v1", "hooks": {"fault": own}}
    pool_policy_set(pool=pool, policy=policy, actor=None)

    pool = embedded_agent_policy(scratch_device=None)

    assert pool.policy["hooks"] == {"fault": own}


@pytest.mark.skipif(shutil.which("nbdkit") is None, reason="needs nbdkit")
def test_the_supervisor_serves_the_export_and_names_it_to_the_token_command(
    tmp_path: Path,
) -> None:
    fault = fault_export_prepare(tmp_path, root=True)
    as_user = fault_export_prepare(tmp_path / "user", root=False)

    programs = {
        p.name: p for p in supervise.embedded_programs("h", 8130, tmp_path, {}, fault)
    }
    argv = supervise.agent_token_argv(tmp_path, False, fault)

    assert programs["fault-export"].argv[0] == "nbdkit"
    assert (tmp_path / "lab/fault-nbd" / IMAGE).is_file()
    assert not (tmp_path / "lab/fault-nbd" / ERROR_FILE).exists()
    assert f"--fault-hook={tmp_path / 'lab/hooks/fault'}" in argv
    if shutil.which("ip"):
        assert f"--fault-endpoint={fault.endpoint}" in argv
        assert fault.endpoint.startswith("tcp:127.0.0.1:")
    assert as_user.endpoint == ""  # a run reaches tcp only through its namespace
    assert "fault-export" not in {
        p.name for p in supervise.embedded_programs("h", 8130, tmp_path)
    }
    usage = subprocess.run(  # the hook runs with the interpreter and tree of now
        [fault.hook, "start", "{}"], capture_output=True, text=True, timeout=60,
        env={"PATH": os.environ.get("PATH", "")}, check=False,
    )  # fmt: skip
    assert usage.returncode == 2
    assert "unknown action None" in usage.stderr
