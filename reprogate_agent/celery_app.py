"""The agent's own Celery app: no Django, no result backend, no events, no remote
control. It consumes its pool's queue and its host's own (the runs of a campaign
bound to named hosts, such as a gate's canary hosts) one message at a time
(``--pool solo``, prefetch 1, ``acks_late``) and knows one task,
``benchmarks.execute_run``, under the name and arguments the server sends.

A refused host token stops the agent: the message goes back to the queue (another
host of the pool takes it) and the worker shuts down after it.

The worker acknowledges a message as soon as its run ends (``AgentConsumer``).
Celery's event loop would defer the acknowledgement to its next turn, and when the
run was taken from a deferred read that turn waits for the loop's next timer (up
to 10 s) while the broker, holding the prefetch window of one, sends nothing: an
idle agent beside queued runs. With four agents on RabbitMQ that cost a whole run
in three of seven scale-out benchmark campaigns (tests/perf/README.md)."""

from __future__ import annotations

import logging
from typing import Any, Final

from celery import Celery
from celery.exceptions import Reject
from celery.platforms import EX_FAILURE
from celery.worker import state
from celery.worker.consumer import Consumer

from benchmarks.lib.queues import (
    EXECUTE_RUN,
    host_name_routable,
    host_queue,
    pool_queue,
)
from reprogate_agent.client import RunnerClient, TokenRefused, Unreachable
from reprogate_agent.execute import Terms, execute_run
from reprogate_agent.options import EMBEDDED_BROKER_SCHEME, AgentOptions

logger = logging.getLogger(__name__)

TASK_NAME: Final = EXECUTE_RUN
# The embedded broker's polling, as the server's settings have it.
EMBEDDED_POLLING_S: Final = 0.2


class AgentConsumer(Consumer):
    """Celery's consumer, but a message's acknowledgement (or rejection) is written
    at once instead of on the event loop's next turn. The agent's solo pool runs
    each task on the loop's own thread, so this is the thread that would write it
    anyway (as Celery's blocking loop does for green pools)."""

    def call_soon_ack(self, p: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            p(*args, **kwargs)
        except Exception:
            logger.exception("acknowledging a message failed")
        return p


def stop_worker(reason: str) -> None:
    """Ask the worker to shut down once the message at hand is done (from any
    thread: the consumer's loop checks the flag)."""
    logger.critical("the agent stops: %s", reason)
    state.should_stop = EX_FAILURE


def create_app(options: AgentOptions, queue: str) -> Celery:
    """The agent's app. Never the process's current app: the tests that make one
    beside the server's app must not send the server's tasks to a pool's broker."""
    embedded = options.broker_url.startswith(f"{EMBEDDED_BROKER_SCHEME}://")
    if embedded:  # the embedded default's agent, beside the server
        from benchmarks.lib.broker import use_transport

        use_transport()
    # No fixups: a DJANGO_SETTINGS_MODULE left in the environment loads no Django.
    app = Celery(
        "reprogate_agent",
        broker=options.broker_url,
        set_as_current=False,
        fixups=[],
    )
    app.conf.update(
        task_serializer="json",
        accept_content=["json"],
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        task_ignore_result=True,
        result_backend=None,
        worker_prefetch_multiplier=1,
        worker_concurrency=1,
        worker_send_task_events=False,
        task_send_sent_event=False,
        worker_enable_remote_control=False,
        broker_connection_retry_on_startup=True,
        task_default_queue=queue,
        task_create_missing_queues=True,
        worker_hijack_root_logger=True,
        worker_consumer="reprogate_agent.celery_app:AgentConsumer",
    )
    if embedded:
        app.conf.broker_transport_options = {"polling_interval": EMBEDDED_POLLING_S}
    return app


def register_task(
    app: Celery, client: RunnerClient, terms: Terms, options: AgentOptions
) -> Any:
    @app.task(
        name=TASK_NAME,
        bind=True,
        acks_late=True,
        reject_on_worker_lost=True,
        ignore_result=True,
    )
    def execute_run_task(self: Any, run_id: int, attempt: int | None = None) -> str:
        if not isinstance(run_id, int) or not isinstance(attempt, int):
            logger.warning(
                "message %r %r is not a run attempt: dropped", run_id, attempt
            )
            return "dropped"
        try:
            outcome = execute_run(client, terms, options.work_dir, run_id, attempt)
        except TokenRefused as refused:
            stop_worker(
                f"the server refused the host token ({refused.detail}); run "
                f"{run_id} attempt {attempt} goes back to the queue for another host"
            )
            raise Reject(str(refused), requeue=True) from refused
        except Unreachable as error:
            logger.error(
                "run %s attempt %s: %s; back to the queue", run_id, attempt, error
            )
            raise Reject(str(error), requeue=True) from error
        logger.info("run %s attempt %s: %s", run_id, attempt, outcome)
        return outcome

    return execute_run_task


def pool_queue_of(answer: dict[str, Any]) -> str:
    """The queue ``hello`` named, checked against its pool's name."""
    pool, queue = str(answer.get("pool") or ""), str(answer.get("queue") or "")
    expected = pool_queue(pool)
    if queue != expected:
        raise ValueError(f"The server named queue {queue!r} for pool {pool!r}.")
    return queue


def host_queue_of(answer: dict[str, Any], node_name: str) -> str | None:
    """The host's own queue ``hello`` named (the runs of campaigns bound to
    named hosts), checked against the pool's and this agent's names; None when
    the server names none (its worker name cannot name a queue)."""
    queue = str(answer.get("host_queue") or "")
    if not queue:
        return None
    pool = str(answer.get("pool") or "")
    expected = host_queue(pool, node_name) if host_name_routable(node_name) else ""
    if queue != expected:
        raise ValueError(
            f"The server named queue {queue!r} for host {node_name!r} of {pool!r}."
        )
    return queue


def agent_queues(queue: str, host_queue: str | None) -> list[str]:
    """What the agent's worker consumes: its pool's queue, then its host's own
    when the server named one."""
    return [queue, *([host_queue] if host_queue else [])]


def create_worker(
    app: Celery, node_name: str, queue: str, host_queue: str | None = None
) -> Any:
    """The agent's worker: one run at a time, on its pool's queue and its host's
    own (``host_queue``, when the server named one) only, and none of the
    broker traffic a pool's user may not do (events, gossip, mingle, remote
    control)."""
    return app.Worker(
        hostname=node_name,
        pool_cls="solo",
        concurrency=1,
        queues=agent_queues(queue, host_queue),
        without_gossip=True,
        without_mingle=True,
        without_heartbeat=True,
        task_events=False,
        loglevel="INFO",
        optimization="fair",
    )
