"""The drift policy: default severities by rule, an RFP's overrides, the
version level of a mismatch, and the problems of a malformed policy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks.lib.environment import (
    DEFAULT_RULES,
    Drift,
    capture_environment,
    drift_policy,
    drift_policy_problems,
    environment_drift,
)
from benchmarks.lib.environment.policy import version_level
from procurement.lib.drift_policy import SCHEMA
from tests.benchmarks.environment.fakehost import TOOLS, FakeTools, fake_host, write
from tests.benchmarks.environment.test_drift import capture, manifest


def by_field(drifts: list[Drift]) -> dict[str, Drift]:
    return {d.field: d for d in drifts}


def no_gpu_host(tmp_path: Path) -> dict[str, Any]:
    tools = FakeTools({k: v for k, v in TOOLS.items() if "nvidia" not in k})
    return capture(tmp_path, tools=tools, gpus=0)


def test_eight_gpus_declared_none_found_is_major(tmp_path: Path) -> None:
    drifts = by_field(environment_drift(no_gpu_host(tmp_path), manifest()))

    count = drifts["hosts.gpu.gpu.count"]
    assert (count.declared, count.captured, count.severity, count.rule) == (
        "8", "0", "major", "accelerator.count",
    )  # fmt: skip
    model = drifts["hosts.gpu.gpu.model"]
    assert (model.severity, model.rule) == ("major", "accelerator.model")
    assert drifts["hosts.gpu.gpu.vbios"].rule == "unverifiable"


def test_a_major_firmware_or_driver_version_is_major(tmp_path: Path) -> None:
    declared = manifest()
    declared["hosts"]["gpu"]["gpu"].update(vbios="97.00.99.00.01", driver="560.35.03")

    drifts = by_field(environment_drift(capture(tmp_path), declared))

    assert drifts["hosts.gpu.gpu.vbios"].rule == "accelerator.firmware.major"
    assert drifts["hosts.gpu.gpu.vbios"].severity == "major"
    assert drifts["hosts.gpu.gpu.driver"].rule == "accelerator.driver.major"


def test_a_driver_minor_version_is_minor_by_default(tmp_path: Path) -> None:
    declared = manifest()
    declared["hosts"]["gpu"]["gpu"]["driver"] = "550.90.07"

    drift = by_field(environment_drift(capture(tmp_path), declared))[
        "hosts.gpu.gpu.driver"
    ]

    assert (drift.severity, drift.rule) == ("minor", "accelerator.driver.minor")


def test_an_rfps_policy_overrides_rule_by_rule(tmp_path: Path) -> None:
    policy = drift_policy(
        {"schema": SCHEMA, "rules": {"accelerator.count": "info",
                                     "accelerator.model": "ignore",
                                     "package": "major"}},
        source="RFP-2026-07",
    )  # fmt: skip

    declared = manifest()
    declared["packages"]["fio"] = "3.36"

    drifts = by_field(environment_drift(no_gpu_host(tmp_path), declared, policy))

    assert drifts["hosts.gpu.gpu.count"].severity == "info"
    assert drifts["hosts.gpu.gpu.count"].policy == "RFP-2026-07"
    assert drifts["hosts.gpu.gpu.driver"].policy == "default"
    assert "hosts.gpu.gpu.model" not in drifts  # ignored
    assert (drifts["packages.fio"].severity, drifts["packages.fio"].rule) == (
        "major", "package",
    )  # fmt: skip
    assert drifts["packages.nvme-cli"].severity == "info"  # unverifiable here
    assert policy.source == "RFP-2026-07"
    assert policy.as_dict()["rules"]["kernel"] == "major"  # the default stays


def test_an_invalid_policy_gives_the_defaults() -> None:
    policy = drift_policy({"rules": {"accelerator.count": "info"}})

    assert policy.rules == dict(DEFAULT_RULES)


@pytest.mark.parametrize(
    ("document", "problems"),
    [
        (None, []),
        ({}, []),
        ({"schema": SCHEMA, "rules": {"kernel": "minor"}}, []),
        ([1], ["$: a drift policy is a JSON object"]),
        ({"rules": {}}, [f"$.schema: must be {SCHEMA!r}"]),
        ({"schema": SCHEMA, "rules": {"gpu.colour": "major"}},
         ["$.rules.gpu.colour: unknown rule"]),
        ({"schema": SCHEMA, "rules": {"kernel": "fatal"}},
         ["$.rules.kernel: one of major, minor, info, ignore"]),
        ({"schema": SCHEMA, "rules": [], "extra": 1},
         ["$.extra: unknown key (schema, rules)",
          "$.rules: an object of rule → severity"]),
    ],
)  # fmt: skip
def test_policy_problems_name_their_path(document: Any, problems: list[str]) -> None:
    assert drift_policy_problems(document) == problems


@pytest.mark.parametrize(
    ("declared", "captured", "level"),
    [("550.127.05", "560.35.03", "major"), ("550.127.05", "550.90.07", "minor"),
     ("96.00.99.00.01", "96.00.99.00.02", "patch"), ("GDC7302Q", "GDC7502Q", "major"),
     ("28.42.1000", "28.042.1001", "patch"), ("5.15", "6", "major")],
)  # fmt: skip
def test_version_level(declared: str, captured: str, level: str) -> None:
    assert version_level(declared, captured) == level


def test_every_default_rule_has_a_valid_severity() -> None:
    assert set(DEFAULT_RULES.values()) <= {"major", "minor", "info"}
    assert all(d.rule for d in environment_drift({}, manifest()))


def tuned_host(tmp_path: Path) -> dict[str, Any]:
    tree = fake_host(tmp_path / "tuned")
    write(tree, "proc/cmdline", "BOOT_IMAGE=/vmlinuz iommu=pt hugepagesz=1G\n")
    write(tree, "proc/sys/vm/swappiness", "10\n")
    write(tree, "sys/kernel/mm/transparent_hugepage/enabled", "always [never]\n")
    write(tree, "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "powersave\n")
    return capture_environment(tree, runner=FakeTools())


def test_declared_tuning_is_compared_under_its_rules(tmp_path: Path) -> None:
    declared = manifest()
    gpu_host = declared["hosts"]["gpu"]
    gpu_host["kernel"] = {"release": "5.15.0-125-generic",
                          "cmdline": "iommu=pt intel_iommu=on",
                          "sysctls": {"vm.swappiness": 10, "vm.dirty_ratio": 5,
                                      "net.unknown": 1}}  # fmt: skip
    gpu_host["thp"] = "madvise"
    gpu_host["cpu"]["governor"] = "performance"

    drifts = by_field(environment_drift(tuned_host(tmp_path), declared))

    cmdline = drifts["hosts.gpu.kernel.cmdline"]
    assert (cmdline.declared, cmdline.severity, cmdline.rule) == (
        "intel_iommu=on", "minor", "kernel.cmdline",
    )  # fmt: skip
    assert "hosts.gpu.kernel.release" not in drifts  # the release matches
    assert "hosts.gpu.kernel.sysctls.vm.swappiness" not in drifts  # 10 == "10"
    assert drifts["hosts.gpu.kernel.sysctls.vm.dirty_ratio"].rule == "unverifiable"
    assert drifts["hosts.gpu.kernel.sysctls.net.unknown"].rule == "unverifiable"
    thp = drifts["hosts.gpu.thp"]
    assert (thp.declared, thp.captured, thp.rule) == ("madvise", "never", "thp")
    governor = drifts["hosts.gpu.cpu.governor"]
    assert (governor.captured, governor.severity) == ("powersave", "minor")


def test_a_declared_kernel_release_inside_a_mapping_drifts(tmp_path: Path) -> None:
    declared = manifest()
    declared["hosts"]["gpu"]["kernel"] = {"release": "6.8.0-45-generic"}

    drift = by_field(environment_drift(tuned_host(tmp_path), declared))[
        "hosts.gpu.kernel.release"
    ]

    assert (drift.severity, drift.rule) == ("major", "kernel")
