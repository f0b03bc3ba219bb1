"""Runner settings with their defaults, read when used (tests change them with
the ``settings`` fixture). Each is a Django setting if one is defined, else the
environment variable of the same name (lab hosts configure their workers by
environment), else the default:

- ``RUNNER_HEARTBEAT_SECONDS`` (10): how often a runner worker reports that it
  is alive, and how often a running run writes its own sign of life;
- ``RUNNER_LOST_AFTER_SECONDS`` (120): a host silent this long is shown as lost,
  and a run whose worker was silent this long is reaped;
- ``RUNNER_MAX_ATTEMPTS`` (2): a reaped run is re-queued while it has had fewer
  attempts than this, else it fails with the reason;
- ``RUNNER_WALL_SLACK_SECONDS`` (300) and ``RUNNER_WALL_FACTOR`` (3): a run's
  wall-clock limit is ``duration_s * factor + slack`` of its scenario, at most
  ``RUNNER_MAX_WALL_SECONDS`` (6 h);
- ``RUNNER_WALL_GRACE_SECONDS`` (300): a run claimed longer ago than its wall
  limit plus this is reaped even if its worker still beats;
- ``RUNNER_REDISPATCH_AFTER_SECONDS`` (300): a run still queued this long after
  its message was sent, while its pool has an online host with nothing to do, is
  sent again (the message was lost, or a busy worker holds it prefetched);
- ``RUNNER_PROGRESS_WRITE_SECONDS`` (1.0): progress and log tail are written to
  the database at most this often;
- ``RUNNER_LOG_TAIL_CHARS`` (16,000): how much of the harness's output a run keeps;
- ``RUNNER_WORK_DIR`` (the system's temporary directory): where each run gets a
  fresh working directory (deleted afterwards);
- ``RUNNER_OUTPUT_LIMIT_BYTES`` (1 GiB), ``RUNNER_MAX_OUTPUT_FILES`` (1,000):
  what is kept of the harness's output directory;
- ``RUNNER_MAX_RUNS_PER_CAMPAIGN`` (1,000).
"""

from __future__ import annotations

import os
from typing import Final

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

GiB: Final = 1024**3


def _number(name: str, default: float, *, minimum: float = 0) -> float:
    value = getattr(settings, name, None)
    if value is None:
        raw = os.environ.get(name, "")
        if not raw:
            return default
        try:
            value = float(raw)
        except ValueError:
            raise ImproperlyConfigured(f"{name}={raw!r} is not a number.") from None
    if float(value) < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be at least {minimum}.")
    return float(value)


def heartbeat_seconds() -> float:
    return _number("RUNNER_HEARTBEAT_SECONDS", 10.0, minimum=0.1)


def lost_after_seconds() -> float:
    return _number("RUNNER_LOST_AFTER_SECONDS", 120.0, minimum=0.5)


def max_attempts() -> int:
    return int(_number("RUNNER_MAX_ATTEMPTS", 2, minimum=1))


def wall_limit_seconds(duration_s: float) -> int:
    """The wall-clock limit of a run whose scenario lasts ``duration_s``."""
    factor = _number("RUNNER_WALL_FACTOR", 3.0, minimum=1)
    slack = _number("RUNNER_WALL_SLACK_SECONDS", 300.0, minimum=1)
    ceiling = _number("RUNNER_MAX_WALL_SECONDS", 6 * 3600.0, minimum=1)
    return int(min(ceiling, max(0.0, duration_s) * factor + slack))


def wall_grace_seconds() -> float:
    return _number("RUNNER_WALL_GRACE_SECONDS", 300.0, minimum=1)


def redispatch_after_seconds() -> float:
    return _number("RUNNER_REDISPATCH_AFTER_SECONDS", 300.0, minimum=1)


def progress_write_seconds() -> float:
    return _number("RUNNER_PROGRESS_WRITE_SECONDS", 1.0)


def log_tail_chars() -> int:
    return int(_number("RUNNER_LOG_TAIL_CHARS", 16_000, minimum=100))


def work_dir() -> str | None:
    configured = getattr(settings, "RUNNER_WORK_DIR", None)
    return str(configured or os.environ.get("RUNNER_WORK_DIR", "")) or None


def output_limit_bytes() -> int:
    return int(_number("RUNNER_OUTPUT_LIMIT_BYTES", float(GiB), minimum=1))


def max_output_files() -> int:
    return int(_number("RUNNER_MAX_OUTPUT_FILES", 1000, minimum=1))


def max_runs_per_campaign() -> int:
    return int(_number("RUNNER_MAX_RUNS_PER_CAMPAIGN", 1000, minimum=1))
