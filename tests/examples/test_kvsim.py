"""The KV-cache simulator's parts (harness/kvsim.py), imported from an unpacked
bundle (never from examples/, where a __pycache__ would end up in the bundle)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

TIERS = {
    "block_tokens": 4,
    "block_bytes": 64,
    "kv_bytes_per_token": 1000,
    "memory_blocks": 2,
    "memory_latency_ms": 0.1,
    "memory_gb_per_s": 1.0,
    "ssd_blocks": 3,
    "ssd_latency_ms": 1.0,
    "ssd_gb_per_s": 0.1,
}
ENGINE = {
    "prefill_ms_per_1k_tokens": 100.0,
    "prefill_batch_gain": 0.0,
    "prefill_step_ms": 1.0,
    "decode_step_ms": 10.0,
    "decode_ms_per_seq": 0.0,
}


@pytest.fixture(scope="module")
def kvsim(bundles: dict[str, Path]) -> ModuleType:
    path = bundles["acme-flash"] / "harness" / "kvsim.py"
    spec = importlib.util.spec_from_file_location("bundle_kvsim", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bundle_kvsim"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def request(i: int, prompt: int, *, prefix: str | None = None, covered: int = 0,
            session: str = "", t: float = 0.0, output: int = 1) -> Any:  # fmt: skip
    return SimpleNamespace(
        id=i, t=t, session=session or f"s{i}", prefix=prefix, prefix_tokens=covered,
        prompt_tokens=prompt, output_tokens=output,
    )  # fmt: skip


def test_memory_tier_evicts_the_least_recently_used(kvsim: ModuleType) -> None:
    memory = kvsim.MemoryTier(2)
    memory.put("a", b"1")
    memory.put("b", b"2")
    memory.get("a")

    evicted = memory.put("c", b"3")

    assert evicted == [("b", b"2")]
    assert list(memory.blocks) == ["a", "c"]


def test_blocks_evicted_from_memory_are_read_back_from_the_file(
    kvsim: ModuleType, tmp_path: Path
) -> None:
    cache = kvsim.KvCache(TIERS, tmp_path / "ssd")
    keys = ["k0", "k1", "k2", "k3"]
    cache.store(keys)  # memory keeps k2, k3; k0 and k1 went to the file

    found = cache.lookup(keys)

    # Promoting k0 and k1 pushes k2 and k3 out to the file: all 4 read back.
    assert (found.memory_blocks, found.ssd_blocks) == (0, 4)
    assert len(cache.ssd.write_s) >= 4  # evictions from the small file rewrite some
    assert len(cache.ssd.read_s) == 4
    assert found.io_s > 0
    assert (tmp_path / "ssd").stat().st_size >= 2 * TIERS["block_bytes"]
    cache.ssd.close()
    assert not (tmp_path / "ssd").exists()


def test_lookup_stops_at_the_first_miss(kvsim: ModuleType, tmp_path: Path) -> None:
    cache = kvsim.KvCache({**TIERS, "memory_blocks": 10}, tmp_path / "ssd")
    cache.store(["a", "c"])

    found = cache.lookup(["a", "b", "c"])

    assert (found.memory_blocks, found.ssd_blocks) == (1, 0)
    cache.ssd.close()


def test_a_corrupted_ssd_block_is_an_error(kvsim: ModuleType, tmp_path: Path) -> None:
    cache = kvsim.KvCache(TIERS, tmp_path / "ssd")
    cache.store(["k0", "k1", "k2"])  # k0 is in the file now
    (tmp_path / "ssd").write_bytes(b"\0" * 1024)

    with pytest.raises(OSError, match="read back wrong"):
        cache.lookup(["k0"])
    cache.ssd.close()


def test_a_direct_tier_reads_and_writes_its_device_with_o_direct_and_keeps_it(
    kvsim: ModuleType, tmp_path: Path
) -> None:
    # A preallocated file stands in for the block device (O_DIRECT works on
    # ext4 and xfs; a tmpfs refuses it, and the test says so).
    device = tmp_path / "device"
    device.write_bytes(b"\0" * (4 * 4096))
    tiers = {**TIERS, "block_bytes": 4096, "ssd_blocks": 4}
    try:
        cache = kvsim.KvCache(tiers, device, direct=True)
    except OSError as error:
        pytest.skip(f"O_DIRECT is not supported under {tmp_path}: {error}")
    keys = ["k0", "k1", "k2", "k3"]
    cache.store(keys)

    found = cache.lookup(keys)

    assert (found.memory_blocks, found.ssd_blocks) == (0, 4)
    assert len(cache.ssd.read_s) == 4
    assert device.read_bytes()[:4096] in {
        kvsim.payload(k, 4096) for k in keys
    }  # what was written is on the device, whole blocks
    cache.ssd.close()
    assert device.stat().st_size == 4 * 4096  # a device is never removed


@pytest.mark.parametrize(
    ("size", "block_bytes", "problem"),
    [(4 * 4096, 1000, "not a multiple of"), (4096, 4096, "holds 4096 bytes")],
)
def test_a_direct_tier_refuses_what_o_direct_or_the_device_cannot_hold(
    kvsim: ModuleType, tmp_path: Path, size: int, block_bytes: int, problem: str
) -> None:
    device = tmp_path / "device"
    device.write_bytes(b"\0" * size)
    tiers = {**TIERS, "block_bytes": block_bytes, "ssd_blocks": 4}

    with pytest.raises(OSError, match=problem):
        kvsim.KvCache(tiers, device, direct=True)


def test_keys_are_prefix_blocks_then_the_conversation(
    kvsim: ModuleType, tmp_path: Path
) -> None:
    cache = kvsim.KvCache(TIERS, tmp_path / "ssd")

    keys = cache.keys(request(7, 18, prefix="t0/p1", covered=9, session="t0/s3"), 18)

    # 18 tokens = 4 full blocks of 4; the prefix covers 2 full blocks (9 tokens).
    assert keys == ["t0/p1#0", "t0/p1#1", "t0/s3#2", "t0/s3#3"]
    cache.ssd.close()


def test_engine_caps_concurrency_and_counts_ttft_from_admission(
    kvsim: ModuleType, tmp_path: Path
) -> None:
    cache = kvsim.KvCache(TIERS, tmp_path / "ssd")
    engine = kvsim.Engine(cache, ENGINE, TIERS, concurrency=2, batch_size=1)
    requests = [request(i, 40, t=0.0, output=11) for i in range(4)]

    outcomes = engine.run(requests, lambda at_ms: None)

    # Each prefill: 1 ms step + 40 tokens x 0.1 ms; decode 10 x 10 ms.
    assert [o.ttft_ms for o in outcomes] == pytest.approx([5.0, 10.0, 5.0, 5.0])
    assert [o.admitted_ms for o in outcomes] == pytest.approx([0, 0, 105, 110])
    assert all(o.e2e_ms == pytest.approx(o.ttft_ms + 100) for o in outcomes)
    cache.ssd.close()


def test_a_later_turn_hits_the_blocks_its_previous_turn_stored(
    kvsim: ModuleType, tmp_path: Path
) -> None:
    cache = kvsim.KvCache({**TIERS, "memory_blocks": 100}, tmp_path / "ssd")
    engine = kvsim.Engine(cache, ENGINE, TIERS, concurrency=4, batch_size=1)
    first = request(0, 16, session="s", output=8)
    second = request(1, 28, session="s", t=1.0)  # re-sends 16 + 8 tokens

    outcomes = engine.run([first, second], lambda at_ms: None)

    assert outcomes[0].hit_tokens == 0
    assert outcomes[1].hit_tokens == 24  # 6 blocks of prompt + answer
    assert outcomes[1].ttft_ms < outcomes[0].ttft_ms
    cache.ssd.close()
