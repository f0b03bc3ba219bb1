"""CDI specs resolved to the sandbox's exact bind arguments, or named problems:
an nvidia-ctk-shaped spec (YAML, with a hook), an Ascend-like and a
Hygon-like one, a malformed one, unknown names and unsupported edits."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest

from benchmarks.lib.lab.cdi import cdi_dirs, load_specs, resolve
from benchmarks.lib.lab.devices import (
    DEVICE_UNAVAILABLE,
    POLICY_INVALID,
    ROOT_NEEDED,
    PolicyRefused,
    policy_extras,
)
from benchmarks.lib.lab.policy import parse_policy
from benchmarks.lib.sandbox.extras import allow_list, device_bwrap_args

SPECS = Path(__file__).parent / "cdi_specs"
NODES = Path("/run/reprogate-test/nodes")
# the host's nodes of the NVIDIA spec (it names paths only, as nvidia-ctk does)
HOST = {
    "/dev/nvidia0": (195, 0),
    "/dev/nvidiactl": (195, 255),
    "/dev/nvidia-modeset": (195, 254),
    "/dev/nvidia-uvm": (509, 0),
    "/dev/nvidia-uvm-tools": (509, 1),
}


def fake_stat(path: str) -> os.stat_result:
    if path not in HOST:
        raise FileNotFoundError(2, "No such file or directory", path)
    major, minor = HOST[path]
    fields = [stat.S_IFCHR | 0o666, 0, 0, 1, 0, 0, 0, 0, 0, 0]
    result = os.stat_result(fields, {"st_rdev": os.makedev(major, minor)})
    return result


def specs_dir(tmp_path: Path, *names: str) -> Path:
    directory = tmp_path / "cdi"
    directory.mkdir(exist_ok=True)
    for name in names:
        shutil.copy(SPECS / name, directory / name)
    return directory


def policy(*devices: str, **more: Any) -> dict[str, Any]:
    return {
        "schema": "reprogate.lab-policy/v1",
        "devices": [{"name": d} for d in devices],
        **more,
    }


def extras_of(directory: Path, document: dict[str, Any]) -> Any:
    return policy_extras(
        document, root=True, environ={}, dirs=[directory], stat_fn=fake_stat
    )


def test_nvidia_ctk_spec_with_its_hook_allowed(tmp_path: Path) -> None:
    directory = specs_dir(tmp_path, "nvidia.yaml")
    allow = {"cdi": {"allow_hooks": ["/usr/bin/nvidia-cdi-hook"]}}
    extras, notes = extras_of(directory, policy("nvidia.com/gpu=0", **allow))
    lib = "/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05"
    assert device_bwrap_args(extras, NODES) == [
        *("--dev-bind", f"{NODES}/dev0", "/dev/nvidia0"),
        *("--dev-bind", f"{NODES}/dev1", "/dev/nvidia-modeset"),
        *("--dev-bind", f"{NODES}/dev2", "/dev/nvidia-uvm"),
        *("--dev-bind", f"{NODES}/dev3", "/dev/nvidia-uvm-tools"),
        *("--dev-bind", f"{NODES}/dev4", "/dev/nvidiactl"),
        *("--ro-bind", lib, lib),
    ]
    assert extras.env == {"NVIDIA_VISIBLE_DEVICES": "void"}
    assert allow_list(extras)[-5:] == [
        "c 195:0 rw",
        "c 195:254 rw",
        "c 509:0 rw",
        "c 509:1 rw",
        "c 195:255 rw",
    ]
    assert extras.devices_env() == {"nvidia.com/gpu=0": "/dev/nvidia0"}
    assert notes == [
        "CDI hook not run (allowed by the policy): "
        "nvidia.com/gpu=0: /usr/bin/nvidia-cdi-hook (createContainer)"
    ]


def test_a_hook_the_operator_has_not_allowed_refuses_the_run(tmp_path: Path) -> None:
    directory = specs_dir(tmp_path, "nvidia.yaml")
    with pytest.raises(PolicyRefused) as refused:
        extras_of(directory, policy("nvidia.com/gpu=0"))
    assert refused.value.stop_reason == DEVICE_UNAVAILABLE
    assert refused.value.problems == [
        "nvidia.com/gpu=0: the spec has hook /usr/bin/nvidia-cdi-hook, which the "
        "pool's policy does not allow (cdi.allow_hooks)"
    ]


def test_ascend_like_spec_read_only(tmp_path: Path) -> None:
    directory = specs_dir(tmp_path, "ascend.yaml")
    document = {
        "schema": "reprogate.lab-policy/v1",
        "devices": [{"name": "huawei.com/npu=0", "access": "r"}],
    }
    extras, _ = extras_of(directory, document)
    assert device_bwrap_args(extras, NODES) == [
        *("--dev-bind", f"{NODES}/dev0", "/dev/davinci0"),
        *("--dev-bind", f"{NODES}/dev1", "/dev/davinci_manager"),
        *("--dev-bind", f"{NODES}/dev2", "/dev/devmm_svm"),
        *("--dev-bind", f"{NODES}/dev3", "/dev/hisi_hdc"),
        *("--ro-bind", "/usr/local/Ascend/driver", "/usr/local/Ascend/driver"),
    ]
    assert {node.mode for node in extras.devices} == {0o400}
    assert allow_list(extras)[-4:] == [
        "c 236:0 r",
        "c 237:0 r",
        "c 238:0 r",
        "c 239:0 r",
    ]
    assert extras.env == {"ASCEND_VISIBLE_DEVICES": "0"}


def test_hygon_like_json_spec(tmp_path: Path) -> None:
    directory = specs_dir(tmp_path, "hygon.json")
    extras, _ = extras_of(directory, policy("hygon.com/dcu=0"))
    assert device_bwrap_args(extras, NODES) == [
        *("--dev-bind", f"{NODES}/dev0", "/dev/dri/card0"),
        *("--dev-bind", f"{NODES}/dev1", "/dev/dri/renderD128"),
        *("--dev-bind", f"{NODES}/dev2", "/dev/kfd"),
        *("--dev-bind", f"{NODES}/dev3", "/dev/mkfd"),
    ]
    assert [n.record()["host_path"] for n in extras.devices][-1] == "/dev/mkfd"
    assert extras.env == {"HIP_VISIBLE_DEVICES": "0"}


def test_a_malformed_spec_is_named_when_its_device_is_asked_for(
    tmp_path: Path,
) -> None:
    directory = specs_dir(tmp_path, "hygon.json")
    (directory / "broken.json").write_text('{"cdiVersion": "0.6.0", "kind": ')
    bad = {
        "cdiVersion": "0.6.0",
        "kind": "example.com/ssd",
        "devices": [{"name": "a", "containerEdits": {"deviceNodes": [{"type": "b"}]}}],
    }
    (directory / "bad.json").write_text(json.dumps(bad))
    over = {
        "cdiVersion": "0.6.0",
        "kind": "example.com/over",
        "devices": [{"name": "a", "containerEdits": {}}],
        "containerEdits": {
            "mounts": [{"hostPath": "/etc", "containerPath": "/sandbox/output"}]
        },
    }
    (directory / "over.json").write_text(json.dumps(over))
    registry = load_specs([directory])
    assert registry.problems[str(directory / "over.json")] == [
        "containerEdits.mounts[0].containerPath: may not cover the sandbox's /sandbox"
    ]
    assert registry.problems[str(directory / "bad.json")] == [
        "devices[0].containerEdits.deviceNodes[0].path: must be an absolute path"
    ]
    assert "unreadable" in registry.problems[str(directory / "broken.json")][0]
    with pytest.raises(PolicyRefused) as refused:
        extras_of(directory, policy("example.com/ssd=a"))
    [problem] = refused.value.problems
    assert problem.startswith("example.com/ssd=a: no CDI spec on this host defines it")
    assert "bad.json: devices[0].containerEdits.deviceNodes[0].path" in problem
    extras, _ = extras_of(directory, policy("hygon.com/dcu=0"))  # others still work
    assert len(extras.devices) == 4


def test_unknown_names_missing_nodes_and_unsupported_edits(tmp_path: Path) -> None:
    directory = specs_dir(tmp_path, "nvidia.yaml")
    spec = {
        "cdiVersion": "1.1.0",
        "kind": "example.com/nic",
        "devices": [
            {
                "name": "rdma0",
                "containerEdits": {"netDevices": [{"hostInterfaceName": "ib0"}]},
            },
            {
                "name": "gone",
                "containerEdits": {"deviceNodes": [{"path": "/dev/nothere"}]},
            },
        ],
    }
    (directory / "nic.json").write_text(json.dumps(spec))
    document = policy(
        "nvidia.com/gpu=7", "example.com/nic=rdma0", "example.com/nic=gone"
    )
    with pytest.raises(PolicyRefused) as refused:
        extras_of(directory, document)
    assert refused.value.problems == [
        "nvidia.com/gpu=7: no CDI spec on this host defines it",
        "example.com/nic=rdma0: the spec's netDevices cannot be applied here",
        "example.com/nic=gone: host node /dev/nothere is not there "
        "(No such file or directory)",
    ]


def test_later_directories_win_and_the_env_names_them(tmp_path: Path) -> None:
    first, second = tmp_path / "etc", tmp_path / "run"
    for directory, minor in ((first, 0), (second, 5)):
        directory.mkdir()
        spec = {
            "cdiVersion": "0.6.0",
            "kind": "reprogate.dev/block",
            "devices": [
                {
                    "name": "scratch0",
                    "containerEdits": {
                        "deviceNodes": [
                            {
                                "path": "/dev/loop0",
                                "type": "b",
                                "major": 7,
                                "minor": minor,
                            }
                        ]
                    },
                }
            ],
        }
        (directory / "block.json").write_text(json.dumps(spec))
    assert cdi_dirs(None) == [Path("/etc/cdi"), Path("/var/run/cdi")]
    environ = {"REPROGATE_CDI_DIRS": f"{first}:{second}"}
    extras, _ = policy_extras(
        policy("reprogate.dev/block=scratch0"), root=True, environ=environ
    )
    assert [(n.kind, n.major, n.minor) for n in extras.devices] == [("b", 7, 5)]


def test_a_non_root_runner_refuses_a_device_policy() -> None:
    with pytest.raises(PolicyRefused) as refused:
        policy_extras(policy("nvidia.com/gpu=0"), root=False, environ={})
    assert refused.value.stop_reason == ROOT_NEEDED
    assert "does not run as root" in refused.value.problems[0]
    extras, _ = policy_extras({}, root=False, environ={})  # no policy: fine
    assert extras.empty


def test_an_invalid_policy_is_refused_with_its_problems() -> None:
    with pytest.raises(PolicyRefused) as refused:
        policy_extras({"schema": "x", "devices": "gpu"}, root=True, environ={})
    assert refused.value.stop_reason == POLICY_INVALID
    assert refused.value.problems == [
        "schema: must be 'reprogate.lab-policy/v1'",
        "devices: must be a list",
    ]


def test_two_devices_of_one_spec_share_its_nodes_once(tmp_path: Path) -> None:
    directory = specs_dir(tmp_path, "nvidia.yaml")
    allow = {"cdi": {"allow_hooks": ["/usr/bin/nvidia-cdi-hook"]}}
    document = policy("nvidia.com/gpu=0", "nvidia.com/gpu=all", **allow)
    extras, _ = extras_of(directory, document)
    paths = [n.path for n in extras.devices]
    assert paths.count("/dev/nvidia0") == 1
    assert len(paths) == 5
    assert extras.devices_env() == {
        "nvidia.com/gpu=0": "/dev/nvidia0",
        "nvidia.com/gpu=all": "/dev/nvidia0",
    }
    registry = load_specs([directory])
    resolution = resolve(parse_policy(document), registry, stat_fn=fake_stat)
    assert resolution.problems == []
