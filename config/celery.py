"""The Celery application. Lab pools consume their own queue, ``pool.<name>``."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("reprogate")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_configure.connect
def _load_settings(sender: Celery, **kwargs: Any) -> None:
    """Before Celery reads the settings: a bad one is one line naming it, exit 3."""
    from config.env import load_settings_or_exit

    load_settings_or_exit()


@app.on_after_configure.connect
def _make_broker_folders(sender: Celery, **kwargs: Any) -> None:
    """kombu's filesystem transport does not create its folders itself."""
    if not str(sender.conf.broker_url).startswith("filesystem://"):
        return
    options = sender.conf.broker_transport_options or {}
    for key in (
        "data_folder_in",
        "data_folder_out",
        "control_folder",
        "processed_folder",
    ):
        if options.get(key):
            Path(options[key]).mkdir(parents=True, exist_ok=True)


DEFAULT_QUEUE = "celery"
_POOL_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")


def pool_queue(pool_name: str) -> str:
    """The queue a lab pool's runner workers consume (``-Q pool.<name>``)."""
    if not _POOL_NAME.fullmatch(pool_name):
        raise ValueError(
            f"Lab pool name {pool_name!r} must be lowercase letters, digits and dashes."
        )
    return f"pool.{pool_name}"
