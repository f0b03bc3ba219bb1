"""Anti-gaming checks of one run, made by the runner on the lab host and
recorded with the run (a gate's stop-loss reads them: ``check_flagged``).

Each check is ``{"id", "applicable", "flagged", "detail", "values"}``: whether
it applies to the run's scenario, whether it found the result suspect, a
sentence saying why, and the numbers it judged. Every run records all three,
in this order:

- ``seed_ignored``: a ``"seed_sensitive": true`` scenario is run once more in
  the same run with another fresh seed (its outputs kept apart, never the run's
  outputs); the declared outputs' SHA-256 digests identical in both runs (or
  the second run failing, so that nothing can be compared) flag it.
- ``cold_cache_unproven``: a ``cache: cold`` scenario records the droppable
  page cache (``/proc/meminfo`` ``Cached`` less ``Shmem``: tmpfs and shared
  memory cannot be dropped) before and after the drop; it is proven when the
  drop was made and the size after is at most half the size before or at most
  64 MiB, and flagged otherwise (no drop, unreadable sizes, or a cache the drop
  did not empty).
- ``working_set_fits_in_memory``: a scenario's declared ``working_set_bytes``
  below 5x the host's memory (MLPerf Storage's rule: the data set must be at
  least 5x host memory so that the page cache cannot serve it) is flagged; the
  host's memory is the environment capture's ``memory.total_bytes``.

Pure Python, no Django: the agent makes the checks, the server checks their
shape (``checks_problems``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

SEED_IGNORED: Final = "seed_ignored"
COLD_CACHE_UNPROVEN: Final = "cold_cache_unproven"
WORKING_SET_FITS: Final = "working_set_fits_in_memory"
CHECK_IDS: Final = (SEED_IGNORED, COLD_CACHE_UNPROVEN, WORKING_SET_FITS)
CHECK_LABELS: Final = {  # what a flag says, for people
    SEED_IGNORED: "Harness ignores the lab's seed",
    COLD_CACHE_UNPROVEN: "Cold page cache not proven",
    WORKING_SET_FITS: "Working set fits in host memory",
}
MEMINFO: Final = Path("/proc/meminfo")
COLD_CACHE_FLOOR_BYTES: Final = 64 << 20  # a drop leaving at most this is proven
WORKING_SET_FACTOR: Final = 5  # MLPerf Storage: data set >= 5x host memory
MAX_DETAIL_CHARS: Final = 500
MAX_VALUES: Final = 16


def check(
    check_id: str,
    *,
    flagged: bool,
    detail: str,
    values: Mapping[str, Any] | None = None,
    applicable: bool = True,
) -> dict[str, Any]:
    return {
        "id": check_id,
        "applicable": applicable,
        "flagged": flagged and applicable,
        "detail": detail,
        "values": dict(values or {}),
    }


def not_applicable(check_id: str, detail: str) -> dict[str, Any]:
    return check(check_id, flagged=False, detail=detail, applicable=False)


# -- seed_ignored ----------------------------------------------------------------


def seed_sensitive(scenario: Mapping[str, Any]) -> bool:
    return scenario.get("seed_sensitive") is True


def seed_check(
    scenario: Mapping[str, Any],
    *,
    seed: int | None,
    second_seed: int | None,
    first: Mapping[str, str | None],
    second: Mapping[str, str | None] | None,
    first_ok: bool = True,
) -> dict[str, Any]:
    """``first`` and ``second`` name each declared output's SHA-256 (None: not
    written) in the run and in its re-run with ``second_seed`` (``second`` None:
    the re-run did not succeed)."""
    if not seed_sensitive(scenario):
        why = "The scenario is not seed_sensitive: it is not re-run with another seed."
        return not_applicable(SEED_IGNORED, why)
    values: dict[str, Any] = {"seed": seed, "second_seed": second_seed}
    if not first_ok:
        why = "Not re-run: the run itself did not succeed."
        return check(SEED_IGNORED, flagged=False, detail=why, values=values)
    if second is None:
        rerun = "could not be run" if second_seed is None else "did not succeed"
        why = (
            f"The re-run with another seed {rerun}, so its outputs could not be "
            "compared with the run's."
        )
        return check(SEED_IGNORED, flagged=True, detail=why, values=values)
    values["outputs"] = {
        path: {"sha256": first.get(path), "second_sha256": second.get(path)}
        for path in sorted(set(first) | set(second))
    }
    same = [p for p in sorted(first) if first[p] and first[p] == second.get(p)]
    if first and len(same) == len(first):
        why = (
            f"The declared outputs are byte for byte the same with seed {seed} and "
            f"with seed {second_seed}: the harness ignores REPROGATE_SEED."
        )
        return check(SEED_IGNORED, flagged=True, detail=why, values=values)
    why = f"The declared outputs differ between seed {seed} and seed {second_seed}."
    return check(SEED_IGNORED, flagged=False, detail=why, values=values)


# -- cold_cache_unproven -----------------------------------------------------------


@dataclass(frozen=True)
class PageCache:
    """``/proc/meminfo``'s ``Cached`` and ``Shmem``, in bytes."""

    cached: int
    shmem: int

    @property
    def droppable(self) -> int:
        return max(0, self.cached - self.shmem)


def page_cache(meminfo: Path = MEMINFO) -> PageCache | None:
    """The page cache's size now (None where ``meminfo`` cannot be read)."""
    try:
        text = meminfo.read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    found: dict[str, int] = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if key in ("Cached", "Shmem") and parts and parts[0].isdigit():
            found[key] = int(parts[0]) * (1024 if parts[1:] == ["kB"] else 1)
    if "Cached" not in found:
        return None
    return PageCache(found["Cached"], found.get("Shmem", 0))


def cold_cache_check(
    scenario: Mapping[str, Any],
    *,
    dropped: bool | None,
    before: PageCache | None,
    after: PageCache | None,
) -> dict[str, Any]:
    if scenario.get("cache") != "cold":
        why = "A warm-cache scenario: the page cache is not dropped."
        return not_applicable(COLD_CACHE_UNPROVEN, why)
    values: dict[str, Any] = {
        "dropped": bool(dropped),
        "before_bytes": before.droppable if before else None,
        "after_bytes": after.droppable if after else None,
        "cached_before_bytes": before.cached if before else None,
        "cached_after_bytes": after.cached if after else None,
        "floor_bytes": COLD_CACHE_FLOOR_BYTES,
    }
    if not dropped:
        why = "This host did not allow dropping the page cache: it may be warm."
        return check(COLD_CACHE_UNPROVEN, flagged=True, detail=why, values=values)
    if before is None or after is None:
        why = "The page cache was dropped, but its size could not be read."
        return check(COLD_CACHE_UNPROVEN, flagged=True, detail=why, values=values)
    b, a = before.droppable, after.droppable
    sizes = f"{_mib(b)} before the drop, {_mib(a)} after"
    if a > b / 2 and a > COLD_CACHE_FLOOR_BYTES:
        why = (
            f"The page cache held {sizes}: more than half stayed and more than "
            f"{_mib(COLD_CACHE_FLOOR_BYTES)}, so the drop is not shown."
        )
        return check(COLD_CACHE_UNPROVEN, flagged=True, detail=why, values=values)
    why = f"The page cache held {sizes}: the drop is shown."
    return check(COLD_CACHE_UNPROVEN, flagged=False, detail=why, values=values)


# -- working_set_fits_in_memory ---------------------------------------------------


def host_memory_bytes(environment: Mapping[str, Any]) -> int | None:
    memory = environment.get("memory")
    total = memory.get("total_bytes") if isinstance(memory, Mapping) else None
    if isinstance(total, bool) or not isinstance(total, int) or total <= 0:
        return None
    return total


def working_set_check(
    scenario: Mapping[str, Any], environment: Mapping[str, Any]
) -> dict[str, Any]:
    working_set = scenario.get("working_set_bytes")
    if isinstance(working_set, bool) or not isinstance(working_set, int):
        why = "The scenario declares no working_set_bytes."
        return not_applicable(WORKING_SET_FITS, why)
    memory = host_memory_bytes(environment)
    values: dict[str, Any] = {
        "working_set_bytes": working_set,
        "host_memory_bytes": memory,
        "factor": WORKING_SET_FACTOR,
    }
    if memory is None:
        why = "The host's memory was not captured, so the working set cannot be judged."
        return check(WORKING_SET_FITS, flagged=True, detail=why, values=values)
    ratio = working_set / memory
    values["ratio"] = round(ratio, 3)
    sizes = f"{_gib(working_set)} against {_gib(memory)} of host memory"
    if working_set < WORKING_SET_FACTOR * memory:
        why = (
            f"The working set is {sizes} ({ratio:.2f}x, under "
            f"{WORKING_SET_FACTOR}x): the page cache can serve it."
        )
        return check(WORKING_SET_FITS, flagged=True, detail=why, values=values)
    why = f"The working set is {sizes} ({ratio:.2f}x, at least {WORKING_SET_FACTOR}x)."
    return check(WORKING_SET_FITS, flagged=False, detail=why, values=values)


def _mib(n: int) -> str:
    return f"{n / (1 << 20):,.0f} MiB"


def _gib(n: int) -> str:
    return f"{n / (1 << 30):,.1f} GiB"


# -- what the server accepts -------------------------------------------------------


def checks_problems(value: Any) -> list[str]:
    """How a run's checks as an agent sent them are malformed (empty: fine):
    a list of at most one entry per known id, each of the five keys."""
    if not isinstance(value, list):
        return ["checks: must be a list"]
    problems, seen = [], set()
    for index, item in enumerate(value):
        at = f"checks[{index}]"
        keys = {"id", "applicable", "flagged", "detail", "values"}
        if not isinstance(item, dict) or set(item) != keys:
            problems.append(f"{at}: must be an object of {', '.join(sorted(keys))}")
            continue
        if item["id"] not in CHECK_IDS or item["id"] in seen:
            problems.append(f"{at}.id: must be one of {', '.join(CHECK_IDS)}, once")
        seen.add(item["id"])
        for key in ("applicable", "flagged"):
            if not isinstance(item[key], bool):
                problems.append(f"{at}.{key}: must be true or false")
        detail = item["detail"]
        if not isinstance(detail, str) or len(detail) > MAX_DETAIL_CHARS:
            problems.append(f"{at}.detail: must be a sentence (≤ {MAX_DETAIL_CHARS})")
        values = item["values"]
        if not isinstance(values, dict) or len(values) > MAX_VALUES:
            problems.append(f"{at}.values: must be an object of ≤ {MAX_VALUES} keys")
    return problems


def flagged_ids(checks: Any) -> list[str]:
    """The ids of the flagged checks, in ``CHECK_IDS`` order."""
    listed = checks if isinstance(checks, list) else []
    flagged = {c.get("id") for c in listed if isinstance(c, dict) and c.get("flagged")}
    return [i for i in CHECK_IDS if i in flagged]
