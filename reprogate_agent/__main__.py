"""``python -m reprogate_agent``: read the environment, say hello to the server,
then consume the pool's queue and the host's own (as hello names them) until
stopped (SIGTERM: warm shutdown, the run at hand finishes first) or until the
server refuses the host token.

Exit status: 0 stopped, 1 the worker stopped on a refusal or an error, 2 the
environment is wrong, 3 the server refused the token at hello, 4 the server
could not be reached or answered nonsense.

The host's signing key (``host_key.pem`` in the state directory) is made at the
first start and sent with every hello; the server pins it."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from artifacts.lib.signatures.statement import fingerprint, public_key_pem
from benchmarks.lib.environment import capture_environment
from benchmarks.lib.sandbox import sandbox_capabilities
from benchmarks.lib.sandbox.reporting import json_safe
from benchmarks.lib.signing import HostKeyError, host_key_load_or_create
from reprogate_agent.beacon import Beacon
from reprogate_agent.celery_app import (
    create_app,
    create_worker,
    host_queue_of,
    pool_queue_of,
    register_task,
    stop_worker,
)
from reprogate_agent.client import ClientError, RunnerClient, TokenRefused
from reprogate_agent.execute import Terms
from reprogate_agent.options import AgentOptions, OptionsError, read_options

logger = logging.getLogger("reprogate_agent")


def _hello(
    client: RunnerClient, options: AgentOptions, key: Ed25519PrivateKey
) -> dict[str, Any]:
    return client.hello(
        {
            "worker_name": options.node_name,
            "hostname": options.hostname,
            "pid": os.getpid(),
            "environment": json_safe(capture_environment()),
            "sandbox": json_safe(sandbox_capabilities()),
            "signing_key": public_key_pem(key).decode("ascii"),
        }
    )


def main(env: Mapping[str, str]) -> int:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        options = read_options(env)
    except OptionsError as error:
        print(f"reprogate-agent: {error}", file=sys.stderr)
        return 2
    try:
        key = host_key_load_or_create(options.state_dir)
    except HostKeyError as error:
        print(f"reprogate-agent: {error}", file=sys.stderr)
        return 2
    client = RunnerClient(options.server_url, options.token, ca_file=options.ca_file)
    try:
        answer = _hello(client, options, key)
        queue = pool_queue_of(answer)
        own_queue = host_queue_of(answer, options.node_name)
    except TokenRefused as refused:
        logger.critical(
            "the server refused the host token (%s): ask the lab operator for a "
            "new one",
            refused.detail,
        )
        return 3
    except (ClientError, ValueError) as error:
        logger.critical("hello to %s failed: %s", options.server_url, error)
        return 4
    terms = Terms.from_hello(options.node_name, answer, host_key=key)
    if answer.get("signing_key") == "pending":
        logger.warning(
            "the server has another key pinned for this host: its runs are refused "
            "until the lab operator accepts this one (%s) on the pools page",
            fingerprint(key),
        )
    logger.info(
        "registered as %s on pool %s (host %s); consuming %s",
        options.node_name,
        answer.get("pool"),
        answer.get("host"),
        ", ".join([queue, *([own_queue] if own_queue else [])]),
    )
    app = create_app(options, queue)
    register_task(app, client, terms, options)
    beacon = Beacon(client, options.node_name, terms.heartbeat_seconds, stop_worker)
    beacon.start()
    try:
        worker = create_worker(app, options.node_name, queue, own_queue)
        worker.start()
        code = int(worker.exitcode or 0)
    finally:
        beacon.stop()
        client.close()
    logger.info("the agent %s stopped (exit %s)", options.node_name, code)
    return code


if __name__ == "__main__":
    sys.exit(main(os.environ))
