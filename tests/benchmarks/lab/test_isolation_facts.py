"""The run page's reading of a policy's devices and endpoints in the isolation
record: each device with its path, numbers and access; each endpoint with its
relay's connections and bytes; the device allow-list said, even when none."""

from __future__ import annotations

from benchmarks.selectors.isolation import isolation_facts

RECORD = {
    "method": "bwrap",
    "network": "endpoints",
    "devices": [
        {
            "name": "reprogate.dev/block=scratch0",
            "path": "/dev/loop0",
            "host_path": "/dev/loop0",
            "type": "b",
            "major": 7,
            "minor": 0,
            "access": "r",
        }
    ],
    "endpoints": [
        {
            "name": "kv-tier",
            "address": "tcp:127.0.0.1:10809",
            "via": "netns-relay",
            "connections": 2,
            "bytes_in": 4 << 20,
            "bytes_out": 2048,
        }
    ],
    "device_allow_list": "cgroup-v1",
    "notes": [],
}


def test_devices_and_endpoints_are_read_out() -> None:
    facts = {f.label: f.value for f in isolation_facts(RECORD)}

    assert facts["Network"] == "endpoints"
    assert facts["Devices"] == ("reprogate.dev/block=scratch0 → /dev/loop0 (b 7:0, r)")
    assert facts["Device allow-list"] == "cgroup-v1"
    assert facts["Endpoints"] == (
        "kv-tier tcp:127.0.0.1:10809 via netns-relay: 2 connection(s), "
        "4 MiB in, 2 KiB out"
    )


def test_a_record_without_a_policy_shows_none_of_it() -> None:
    record = {"method": "bwrap", "network": "none", "devices": [], "endpoints": []}

    labels = [f.label for f in isolation_facts(record)]

    assert "Devices" not in labels
    assert "Endpoints" not in labels
    assert "Device allow-list" not in labels


def test_the_endpoints_mode_and_the_closed_open_network_do_not_contradict() -> None:
    record = {**RECORD, "limits": {"network": False}}

    facts = {f.label: f.value for f in isolation_facts(record)}

    assert facts["Network"] == "endpoints"
    assert facts["Open network (beyond the policy's endpoints)"] == "no"
    assert "Network allowed" not in facts
