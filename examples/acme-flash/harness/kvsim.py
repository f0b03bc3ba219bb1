"""A small KV-cache tiering simulator (stdlib only; the same file in every
example bundle, vendors differ only in harness/config.json).

It replays a synthetic trace (tracegen.py) against an LLM serving engine whose
KV cache spills from a memory tier to an "SSD" tier:

- memory tier: an LRU dict of KV blocks held in this process (real copies);
- SSD tier: a block device the lab gave the run (REPROGATE_DEVICES), read and
  written with O_DIRECT through a page-aligned buffer, or else a file on local
  disk (buffered), one slot per block, LRU over slots; blocks evicted from
  memory are written to it and read back on a hit (content checked). These
  reads and writes are real and timed.

A prompt is cut into blocks of ``block_tokens`` tokens. The blocks covered by a
request's shared prefix are keyed by (prefix, index), the others by
(conversation, index): a later turn re-sends the previous turn's prompt and
answer, so its leading blocks are those the previous turn stored. Lookup walks
the blocks in order and stops at the first miss (a KV block depends on every
token before it); missed tokens are recomputed, every full block of the prompt
is stored after the prefill and those of prompt + answer when it completes.

Time is simulated in milliseconds (a discrete-event model); only the arrival
window (the scenario's duration_s) is paced to the wall clock, so a scenario
takes about duration_s seconds, the drain after it runs at full speed:

- at most ``concurrency`` requests are in flight (like ``vllm bench serve
  --max-concurrency``: TTFT counts from admission, not from arrival);
- one prefill engine takes up to ``batch_size`` admitted requests at a time; a
  batch lasts prefill_step_ms + the recompute time of its missed tokens
  (cheaper per token in larger batches: ``prefill_batch_gain``) + the modelled
  transfer time of its hit blocks (latency + bytes / bandwidth of the tier, at
  ``kv_bytes_per_token``) + the measured time of the real SSD-file reads;
- every request of a batch gets its first token when the batch ends; it then
  decodes its output tokens at decode_step_ms + decode_ms_per_seq per running
  sequence (counted when its decode starts).

The modelled sizes and speeds stand for the vendor's tier (config.json); the
local file holds ``block_bytes`` per block, a scaled-down stand-in, so that a
laptop can run it. What the figures show is the vendor's declared tier model
driven by a real cache policy, real local I/O and the workload's trace.
"""

from __future__ import annotations

import hashlib
import heapq
import mmap
import os
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def payload(key: str, size: int) -> bytes:
    """A block's bytes: its key's 16-byte digest, repeated (checked on reads)."""
    digest = hashlib.blake2b(key.encode(), digest_size=16).digest()
    return (digest * (size // 16 + 1))[:size]


class MemoryTier:
    def __init__(self, capacity: int):
        self.capacity = capacity
        self.blocks: OrderedDict[str, bytes] = OrderedDict()

    def get(self, key: str) -> bytes | None:
        data = self.blocks.get(key)
        if data is not None:
            self.blocks.move_to_end(key)
        return data

    def put(self, key: str, data: bytes) -> list[tuple[str, bytes]]:
        """Store a block; returns the blocks evicted to make room."""
        self.blocks[key] = data
        self.blocks.move_to_end(key)
        evicted = []
        while len(self.blocks) > self.capacity:
            evicted.append(self.blocks.popitem(last=False))
        return evicted


class SsdTier:
    """Blocks in slots of a file, or of a block device (``direct``: opened with
    O_DIRECT, never created, truncated or removed; every transfer goes
    through one page-aligned buffer, as O_DIRECT needs); reads and writes are
    timed (seconds)."""

    def __init__(
        self, path: Path, capacity: int, block_bytes: int, direct: bool = False
    ):
        self.path, self.capacity, self.block_bytes = path, capacity, block_bytes
        self.direct = direct
        self.buffer: mmap.mmap | None = None
        if direct:
            if block_bytes % mmap.PAGESIZE:
                raise OSError(
                    f"SSD tier: block_bytes {block_bytes} is not a multiple of "
                    f"{mmap.PAGESIZE}, as O_DIRECT on {path} needs"
                )
            self.fd = os.open(path, os.O_RDWR | os.O_DIRECT)
            size = os.lseek(self.fd, 0, os.SEEK_END)
            if size < capacity * block_bytes:
                os.close(self.fd)
                raise OSError(
                    f"SSD tier: {path} holds {size} bytes, "
                    f"{capacity} blocks of {block_bytes} need {capacity * block_bytes}"
                )
            self.buffer = mmap.mmap(-1, block_bytes)
        else:
            self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        self.slots: OrderedDict[str, int] = OrderedDict()
        self.free = list(range(capacity - 1, -1, -1))
        self.read_s: list[float] = []
        self.write_s: list[float] = []

    def __contains__(self, key: str) -> bool:
        return key in self.slots

    def read(self, key: str) -> bytes | None:
        slot = self.slots.get(key)
        if slot is None:
            return None
        self.slots.move_to_end(key)
        offset = slot * self.block_bytes
        start = time.perf_counter()
        if self.buffer is not None:
            count = os.preadv(self.fd, [self.buffer], offset)
            self.read_s.append(time.perf_counter() - start)
            data = self.buffer[:count]
        else:
            data = os.pread(self.fd, self.block_bytes, offset)
            self.read_s.append(time.perf_counter() - start)
        if data != payload(key, self.block_bytes):
            raise OSError(f"SSD tier: block {key} read back wrong from {self.path}")
        return data

    def write(self, key: str, data: bytes) -> None:
        if key in self.slots:
            self.slots.move_to_end(key)
            return
        if not self.free:
            _, slot = self.slots.popitem(last=False)
            self.free.append(slot)
        slot = self.free.pop()
        offset = slot * self.block_bytes
        if self.buffer is not None:
            self.buffer[: len(data)] = data
            start = time.perf_counter()
            written = os.pwritev(self.fd, [self.buffer], offset)
        else:
            start = time.perf_counter()
            written = os.pwrite(self.fd, data, offset)
        self.write_s.append(time.perf_counter() - start)
        if written != len(data):
            raise OSError(f"SSD tier: short write to {self.path}")
        self.slots[key] = slot

    def close(self) -> None:
        os.close(self.fd)
        if self.buffer is not None:
            self.buffer.close()
        else:
            self.path.unlink(missing_ok=True)


@dataclass
class Lookup:
    blocks: int = 0  # the blocks looked up; those after the first miss are missed
    memory_blocks: int = 0
    ssd_blocks: int = 0
    io_s: float = 0.0  # measured time of the real SSD-file reads
    # each real SSD-tier read: (offset, bytes, measured seconds), in order
    reads: list[tuple[int, int, float]] = field(default_factory=list)

    @property
    def misses(self) -> int:
        return self.blocks - self.memory_blocks - self.ssd_blocks


class KvCache:
    def __init__(self, tiers: dict[str, Any], ssd_path: Path, direct: bool = False):
        self.block_tokens = int(tiers["block_tokens"])
        self.block_bytes = int(tiers["block_bytes"])
        self.memory = MemoryTier(int(tiers["memory_blocks"]))
        self.ssd = SsdTier(
            ssd_path, int(tiers["ssd_blocks"]), self.block_bytes, direct=direct
        )

    def keys(self, request: Any, tokens: int) -> list[str]:
        """The full blocks of a request's first ``tokens`` tokens: shared-prefix
        blocks, then the conversation's."""
        shared = request.prefix_tokens // self.block_tokens if request.prefix else 0
        total = tokens // self.block_tokens
        keys = [f"{request.prefix}#{k}" for k in range(min(shared, total))]
        return keys + [f"{request.session}#{k}" for k in range(shared, total)]

    def lookup(self, keys: list[str]) -> Lookup:
        found = Lookup(blocks=len(keys))
        for key in keys:
            if self.memory.get(key) is not None:
                found.memory_blocks += 1
                continue
            before = len(self.ssd.read_s)
            data = self.ssd.read(key)
            if data is None:
                break
            found.io_s += sum(self.ssd.read_s[before:])
            offset = self.ssd.slots[key] * self.block_bytes
            found.reads.append((offset, len(data), self.ssd.read_s[-1]))
            found.ssd_blocks += 1
            self._to_memory(key, data)
        return found

    def store(self, keys: Iterable[str]) -> None:
        for key in keys:
            if self.memory.get(key) is None:
                self._to_memory(key, payload(key, self.block_bytes))

    def _to_memory(self, key: str, data: bytes) -> None:
        for old_key, old_data in self.memory.put(key, data):
            self.ssd.write(old_key, old_data)


@dataclass
class Outcome:
    request: Any
    admitted_ms: float = 0.0
    first_token_ms: float = 0.0
    done_ms: float = 0.0
    tpot_ms: float = 0.0
    hit_tokens: int = 0
    ssd_hit_tokens: int = 0  # the part of hit_tokens read from the SSD tier
    shared_hit_tokens: int = 0
    prefill_ms: float = 0.0  # its batch's prefill started
    lookup_ms: float = 0.0  # its KV-cache lookup started (after the batch's earlier)
    lookup: Lookup | None = None
    batch: int = 0  # the requests in its prefill batch

    @property
    def ttft_ms(self) -> float:
        return self.first_token_ms - self.admitted_ms

    @property
    def e2e_ms(self) -> float:
        return self.done_ms - self.admitted_ms


@dataclass
class Engine:
    """The serving engine's discrete-event model (see the module docstring)."""

    cache: KvCache
    engine: dict[str, Any]
    tiers: dict[str, Any]
    concurrency: int
    batch_size: int
    events: list[tuple[float, int, str, Any]] = field(default_factory=list)
    waiting: list[Outcome] = field(default_factory=list)  # arrived, not admitted
    queued: list[Outcome] = field(default_factory=list)  # admitted, no prefill yet
    in_flight: int = 0
    decoding: int = 0
    busy: bool = False
    seq: int = 0

    def push(self, at_ms: float, kind: str, item: Any) -> None:
        self.seq += 1
        heapq.heappush(self.events, (at_ms, self.seq, kind, item))

    def run(
        self, requests: list[Any], wait_until: Callable[[float], None]
    ) -> list[Outcome]:
        outcomes = [Outcome(r) for r in requests]
        for outcome in outcomes:
            self.push(outcome.request.t * 1000.0, "arrive", outcome)
        while self.events:
            now, _, kind, item = heapq.heappop(self.events)
            wait_until(now)
            getattr(self, f"_{kind}")(now, item)
            if not self.busy and self.queued:
                self._prefill(now)
        return outcomes

    def _arrive(self, now: float, outcome: Outcome) -> None:
        self.waiting.append(outcome)
        self._admit(now)

    def _admit(self, now: float) -> None:
        while self.waiting and self.in_flight < self.concurrency:
            outcome = self.waiting.pop(0)
            outcome.admitted_ms = now
            self.in_flight += 1
            self.queued.append(outcome)

    def _prefill(self, now: float) -> None:
        batch, self.queued = (
            self.queued[: self.batch_size],
            self.queued[self.batch_size :],
        )
        e, t = self.engine, self.tiers
        per_token = e["prefill_ms_per_1k_tokens"] / 1000.0
        per_token *= 1.0 - e["prefill_batch_gain"] * (1.0 - 1.0 / len(batch))
        compute_ms = memory_ms = ssd_ms = io_ms = 0.0
        for outcome in batch:
            keys = self.cache.keys(outcome.request, outcome.request.prompt_tokens)
            outcome.prefill_ms, outcome.lookup_ms = now, now + io_ms
            outcome.batch = len(batch)
            found = outcome.lookup = self.cache.lookup(keys)
            hit_blocks = found.memory_blocks + found.ssd_blocks
            outcome.hit_tokens = hit_blocks * self.cache.block_tokens
            outcome.ssd_hit_tokens = found.ssd_blocks * self.cache.block_tokens
            outcome.shared_hit_tokens = min(
                outcome.hit_tokens, outcome.request.prefix_tokens
            )
            compute_ms += (
                outcome.request.prompt_tokens - outcome.hit_tokens
            ) * per_token
            memory_ms += _transfer_ms(found.memory_blocks, t, "memory")
            ssd_ms += _transfer_ms(found.ssd_blocks, t, "ssd")
            io_ms += found.io_s * 1000.0
            self.cache.store(keys)
        duration = e["prefill_step_ms"] + compute_ms + memory_ms + ssd_ms + io_ms
        self.busy = True
        self.push(now + duration, "prefilled", batch)

    def _prefilled(self, now: float, batch: list[Outcome]) -> None:
        self.busy = False
        e = self.engine
        for outcome in batch:
            outcome.first_token_ms = now
            self.decoding += 1
            outcome.tpot_ms = (
                e["decode_step_ms"] + e["decode_ms_per_seq"] * self.decoding
            )
            decode_ms = max(outcome.request.output_tokens - 1, 0) * outcome.tpot_ms
            self.push(now + decode_ms, "done", outcome)

    def _done(self, now: float, outcome: Outcome) -> None:
        outcome.done_ms = now
        request = outcome.request
        self.cache.store(
            self.cache.keys(request, request.prompt_tokens + request.output_tokens)
        )
        self.decoding -= 1
        self.in_flight -= 1
        self._admit(now)


def _transfer_ms(blocks: int, tiers: dict[str, Any], tier: str) -> float:
    """Modelled time to bring ``blocks`` KV blocks from ``tier`` to the GPU."""
    if not blocks:
        return 0.0
    size = blocks * tiers["block_tokens"] * tiers["kv_bytes_per_token"]
    gbps = tiers[f"{tier}_gb_per_s"]
    return tiers[f"{tier}_latency_ms"] + size / (gbps * 1e9) * 1000.0


def warm_up(cache: KvCache, requests: Iterable[Any]) -> None:
    """Populate the tiers by serving ``requests`` (no timing kept)."""
    for request in requests:
        cache.lookup(cache.keys(request, request.prompt_tokens))
        cache.store(cache.keys(request, request.prompt_tokens + request.output_tokens))
