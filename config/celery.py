"""The Celery application. Lab pools consume their own queue
(``benchmarks.lib.queues.pool_queue``)."""

from __future__ import annotations

import os
from typing import Any

from celery import Celery
from celery.signals import setup_logging
from kombu.transport import TRANSPORT_ALIASES

from config.logs import worker_logging_setup

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

# The embedded broker, sqla+sqlite:///…: kombu's SQLAlchemy transport with leases
# (benchmarks/lib/broker.py, shared with the embedded default's lab agent). A name,
# resolved on first connection: no SQLAlchemy import here.
TRANSPORT_ALIASES["sqla"] = TRANSPORT_ALIASES["sqlalchemy"] = (
    "benchmarks.lib.broker:Transport"
)

app = Celery("reprogate")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_configure.connect
def _load_settings(sender: Celery, **kwargs: Any) -> None:
    """Before Celery reads the settings: a bad one is one line naming it, exit 3."""
    from config.env import load_settings_or_exit

    load_settings_or_exit()


# Workers log through the settings' LOGGING (config/logs.py), not Celery's format.
setup_logging.connect(worker_logging_setup)

DEFAULT_QUEUE = "celery"
