"""The pool policy document: every problem named with its path; a valid one
parsed; an empty one means no devices and no network."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.lib.lab.policy import (
    Endpoint,
    PolicyError,
    parse_policy,
    policy_problems,
)

EXAMPLE: dict[str, Any] = {
    "schema": "reprogate.lab-policy/v1",
    "devices": [
        {"name": "reprogate.dev/block=scratch0", "access": "rw"},
        {"name": "nvidia.com/gpu=0", "access": "r"},
    ],
    "endpoints": [
        {"name": "kv-tier", "address": "tcp:127.0.0.1:10809"},
        {"name": "nbd0", "address": "unix:/run/reprogate/nbd0.sock"},
    ],
    "telemetry": {"interval_ms": 1000, "block_latency_histogram": False},
    "hooks": {"fault": "/usr/local/lib/reprogate/fault"},
}


def test_the_design_example_is_valid_and_parsed() -> None:
    assert policy_problems(EXAMPLE) == []
    policy = parse_policy(EXAMPLE)
    assert [d.access for d in policy.devices] == ["rw", "r"]
    assert policy.endpoints[0].target == ("127.0.0.1", 10809)
    assert policy.endpoints[1].target == "/run/reprogate/nbd0.sock"
    assert policy.hooks == {"fault": "/usr/local/lib/reprogate/fault"}


@pytest.mark.parametrize("empty", [None, {}])
def test_no_policy_is_an_empty_one(empty: Any) -> None:
    assert parse_policy(empty).empty


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"schema": "v2"}, "schema: must be 'reprogate.lab-policy/v1'"),
        ({"gpus": 8}, "(policy): unknown key(s) gpus"),
        (
            {"devices": [{"name": "gpu0"}]},
            "devices[0].name: 'gpu0' is not a fully-qualified CDI device name "
            "(vendor.com/class=name)",
        ),
        (
            {"devices": [{"name": "a.com/b=c", "access": "w"}]},
            'devices[0].access: must be "r" or "rw"',
        ),
        (
            {"devices": [{"name": "a.com/b=c"}, {"name": "a.com/b=c"}]},
            "devices[1].name: a.com/b=c is listed twice",
        ),
        (
            {"endpoints": [{"name": "x", "address": "tcp:storage.lab:4420"}]},
            "endpoints[0].address: 'tcp:storage.lab:4420': the host must be an "
            "IP address (no names)",
        ),
        (
            {"endpoints": [{"name": "x", "address": "tcp:10.0.0.5:70000"}]},
            "endpoints[0].address: 'tcp:10.0.0.5:70000': the port must be 1-65535",
        ),
        (
            {"endpoints": [{"name": "x", "address": "unix:relative.sock"}]},
            "endpoints[0].address: unix: needs an absolute socket path of at "
            "most 107 bytes",
        ),
        (
            {"endpoints": [{"name": "x", "address": "unix:/dev/x.sock"}]},
            "endpoints[0].address: unix: /dev/x.sock would hide the sandbox's own /dev",
        ),
        (
            {"endpoints": [{"name": "Bad Name", "address": "unix:/run/a.sock"}]},
            "endpoints[0].name: must be lower-case letters, digits, - or _ "
            "(at most 63)",
        ),
        (
            {"telemetry": {"interval_ms": 10}},
            "telemetry.interval_ms: must be 100-60000",
        ),
        (
            {"hooks": {"fault": "fault.sh"}},
            "hooks.fault: must be an absolute path on the lab host",
        ),
        (
            {"hooks": {"vendor": "/bin/true"}},
            "hooks.vendor: unknown role (one of fault, rollback, prerun, postrun)",
        ),
        (
            {"cdi": {"allow_hooks": "x"}},
            "cdi.allow_hooks: must be a list of executable paths",
        ),
    ],
)
def test_each_problem_is_named_with_its_path(
    change: dict[str, Any], problem: str
) -> None:
    document = {"schema": "reprogate.lab-policy/v1", **change}
    assert policy_problems(document) == [problem]
    with pytest.raises(PolicyError) as error:
        parse_policy(document)
    assert error.value.problems == [problem]


def test_not_an_object() -> None:
    assert policy_problems([1]) == ["(policy): must be a JSON object"]


def test_endpoint_kinds() -> None:
    assert Endpoint("a", "tcp:10.0.0.5:4420").kind == "tcp"
    assert Endpoint("a", "unix:/run/a.sock").kind == "unix"
