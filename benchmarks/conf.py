"""Runner settings, read when used (tests change them with the ``settings``
fixture). ``config/settings.py`` declares each one with its environment variable
(lab hosts configure their workers by environment) and its default; this module
reads only ``django.conf.settings`` and repeats the start-up minimums for values
set directly:

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
- the runner API keeps a remote run attempt's uploaded outputs under the
  installation's own var directory (``REPROGATE_VAR_DIR/runner-uploads``), never in
  a folder another installation on the same host could share (``uploads_dir``);
- ``RUNNER_OUTPUT_LIMIT_BYTES`` (1 GiB), ``RUNNER_MAX_OUTPUT_FILES`` (1,000):
  what is kept of the harness's output directory;
- ``RUNNER_MAX_RUNS_PER_CAMPAIGN`` (1,000).
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


def _number(name: str, *, minimum: float = 0) -> float:
    value = float(getattr(settings, name))
    if value < minimum:
        raise ImproperlyConfigured(f"{name}={value:g} must be at least {minimum:g}.")
    return value


def heartbeat_seconds() -> float:
    return _number("RUNNER_HEARTBEAT_SECONDS", minimum=0.1)


def lost_after_seconds() -> float:
    return _number("RUNNER_LOST_AFTER_SECONDS", minimum=0.5)


def max_attempts() -> int:
    return int(_number("RUNNER_MAX_ATTEMPTS", minimum=1))


def wall_limit_seconds(duration_s: float) -> int:
    """The wall-clock limit of a run whose scenario lasts ``duration_s``."""
    factor = _number("RUNNER_WALL_FACTOR", minimum=1)
    slack = _number("RUNNER_WALL_SLACK_SECONDS", minimum=1)
    ceiling = _number("RUNNER_MAX_WALL_SECONDS", minimum=1)
    return int(min(ceiling, max(0.0, duration_s) * factor + slack))


def wall_grace_seconds() -> float:
    return _number("RUNNER_WALL_GRACE_SECONDS", minimum=1)


def redispatch_after_seconds() -> float:
    return _number("RUNNER_REDISPATCH_AFTER_SECONDS", minimum=1)


def progress_write_seconds() -> float:
    return _number("RUNNER_PROGRESS_WRITE_SECONDS")


def log_tail_chars() -> int:
    return int(_number("RUNNER_LOG_TAIL_CHARS", minimum=100))


def work_dir() -> str | None:
    return str(settings.RUNNER_WORK_DIR or "") or None


def uploads_dir() -> Path:
    """Where the runner API writes remote runs' outputs until the runs end."""
    return Path(settings.VAR_DIR) / "runner-uploads"


def output_limit_bytes() -> int:
    return int(_number("RUNNER_OUTPUT_LIMIT_BYTES", minimum=1))


def max_output_files() -> int:
    return int(_number("RUNNER_MAX_OUTPUT_FILES", minimum=1))


def max_runs_per_campaign() -> int:
    return int(_number("RUNNER_MAX_RUNS_PER_CAMPAIGN", minimum=1))


def public_url() -> str:
    """Where lab hosts' agents reach the runner API (no trailing slash)."""
    return str(settings.REPROGATE_PUBLIC_URL or settings.REPROGATE_SITE_URL).rstrip("/")


def agent_broker_url_template() -> str:
    """A pool's broker URL for its agents, ``{pool}`` for the pool's name; empty
    when not configured."""
    return str(settings.REPROGATE_AGENT_BROKER_URL or "").strip()
