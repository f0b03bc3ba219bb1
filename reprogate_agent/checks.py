"""The anti-gaming checks of one run on the lab host (``benchmarks.lib.lab.checks``):
the page cache measured around its drop, and for a ``seed_sensitive`` scenario
the harness run once more with another fresh seed in a pristine copy of the
bundle, its outputs in a folder of their own (never uploaded: the server never
stores them as the run's outputs), their digests compared with the run's."""

from __future__ import annotations

import hashlib
import logging
import os
import secrets
import shutil
import stat
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Final

from benchmarks.lib.lab.checks import (
    PageCache,
    cold_cache_check,
    page_cache,
    seed_check,
    seed_sensitive,
    working_set_check,
)
from benchmarks.lib.sandbox import HarnessResult, drop_page_cache
from benchmarks.lib.sandbox.workspace import Workspace

logger = logging.getLogger(__name__)

SEED_LIMIT: Final = 1 << 53  # the server's seeds: exact in every JSON reader
CHUNK: Final = 1024 * 1024
RERUN_BUNDLE: Final = "rerun-bundle"
RERUN_OUTPUT: Final = "rerun-output"


def cold_cache(run: Mapping[str, Any]) -> tuple[bool | None, dict[str, Any] | None]:
    """For a cold-cache run: the page cache dropped (or not, where the host does
    not allow it) with its size read before and after; the check, else None."""
    scenario = run.get("scenario") or {}
    if run.get("cold_cache") is not True and scenario.get("cache") != "cold":
        return None, None
    before = page_cache()
    dropped = drop_page_cache()
    after: PageCache | None = page_cache()
    check = cold_cache_check(
        {**scenario, "cache": "cold"}, dropped=dropped, before=before, after=after
    )
    return dropped, check


def fresh_seed(other: int | None) -> int:
    """A fresh seed in [0, 2^53), another than ``other``."""
    while (seed := secrets.randbelow(SEED_LIMIT)) == other:
        pass  # pragma: no cover: one chance in 2^53
    return seed


def keep_pristine(space: Workspace, run: Mapping[str, Any]) -> Path | None:
    """A copy of the extracted bundle, before the harness may write in it, for a
    seed_sensitive scenario's re-run (None otherwise)."""
    if not seed_sensitive(run.get("scenario") or {}):
        return None
    copy = space.root / RERUN_BUNDLE
    try:
        shutil.copytree(space.bundle_dir, copy, symlinks=True)
    except OSError:  # a full disk: not re-run, so seed_ignored stays unproven
        logger.exception("the bundle could not be copied for the seed re-run")
        return None
    return copy


def output_digests(folder: Path, paths: Iterable[str]) -> dict[str, str | None]:
    """Each declared output's SHA-256 in ``folder`` (None: not a regular file)."""
    found: dict[str, str | None] = {}
    for path in paths:
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            fd = os.open(folder / path, flags)  # a FIFO does not block
        except OSError:
            found[path] = None
            continue
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                found[path] = None
                continue
            digest = hashlib.sha256()
            while chunk := handle.read(CHUNK):
                digest.update(chunk)
            found[path] = digest.hexdigest()
    return found


def succeeded(result: HarnessResult, stopped: bool) -> bool:
    return not stopped and result.stop_reason == "exited" and result.exit_code == 0


def seed_rerun(
    run: Mapping[str, Any],
    space: Workspace,
    pristine: Path | None,
    first: Mapping[str, str | None],
    first_ok: bool,
    harness: Callable[[Path, Path, int], HarnessResult],
    stopped: Callable[[], bool],
) -> dict[str, Any]:
    """The ``seed_ignored`` check: the harness run once more (``harness(bundle_dir,
    output_dir, seed)``) with a fresh seed when the scenario is seed_sensitive
    and the run succeeded."""
    scenario = run.get("scenario") or {}
    seed = run.get("seed") if isinstance(run.get("seed"), int) else None
    if pristine is None or not first_ok:
        return seed_check(
            scenario, seed=seed, second_seed=None, first=first, second=None,
            first_ok=first_ok,
        )  # fmt: skip
    second_seed = fresh_seed(seed)
    output = space.root / RERUN_OUTPUT
    output.mkdir(mode=0o755)
    result = harness(pristine, output, second_seed)
    second = output_digests(output, first) if succeeded(result, stopped()) else None
    return seed_check(
        scenario, seed=seed, second_seed=second_seed, first=first, second=second
    )


def run_checks(
    run: Mapping[str, Any],
    environment: Mapping[str, Any],
    cache: dict[str, Any] | None,
    seed: dict[str, Any],
) -> list[dict[str, Any]]:
    """The run's three checks, in ``CHECK_IDS`` order."""
    scenario = run.get("scenario") or {}
    cold = cache or cold_cache_check(scenario, dropped=None, before=None, after=None)
    return [seed, cold, working_set_check(scenario, environment)]
