from __future__ import annotations

import socket

from celery import shared_task


@shared_task(name="accounts.worker_ping", soft_time_limit=10)
def worker_ping(nonce: str) -> dict[str, str]:
    """Round-trip probe: proves a worker process consumed the queue and answered."""
    return {"nonce": nonce, "hostname": socket.gethostname()}
