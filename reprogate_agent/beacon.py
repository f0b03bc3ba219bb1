"""The agent's sign of life: a daemon thread beats every ``heartbeat_seconds``
(``POST heartbeat``); at shutdown ``bye`` marks the host offline. A refused
token stops the agent; other failures are logged and the next beat tries again
(the server shows the host lost only after its own delay)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from reprogate_agent.client import ClientError, RunnerClient, TokenRefused

logger = logging.getLogger(__name__)


class Beacon:
    def __init__(
        self,
        client: RunnerClient,
        worker_name: str,
        interval: float,
        on_refused: Callable[[str], None],
    ) -> None:
        self.client, self.worker_name = client, worker_name
        self.interval = interval
        self.on_refused = on_refused
        self.stop_event = threading.Event()
        self._thread: threading.Thread | None = None

    def beat(self) -> bool:
        """One heartbeat; False once the token was refused."""
        try:
            self.client.heartbeat(self.worker_name)
        except TokenRefused as refused:
            self.on_refused(f"the server refused the host token ({refused.detail})")
            return False
        except (ClientError, OSError):
            logger.exception("heartbeat of %s failed", self.worker_name)
        return True

    def run(self) -> None:
        while not self.stop_event.wait(self.interval):
            if not self.beat():
                return

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self.run, name="reprogate-agent-beacon", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop beating and say bye (best effort: the host may be refused)."""
        self.stop_event.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        try:
            self.client.bye(self.worker_name)
        except (ClientError, OSError) as error:
            logger.warning("bye of %s not delivered: %s", self.worker_name, error)
