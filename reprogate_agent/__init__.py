"""The lab host's runner agent: a Celery worker on its pool's queue that talks to
the server's runner API over HTTPS with a host token, and holds no database,
storage or Django secret (``python -m reprogate_agent``).

    REPROGATE_SERVER_URL=https://reprogate.example.com \\
    REPROGATE_HOST_TOKEN_FILE=/etc/reprogate/host-token \\
    REPROGATE_BROKER_URL_FILE=/etc/reprogate/broker-url \\
    REPROGATE_AGENT_WORK_DIR=/var/lib/reprogate-agent \\
    python -m reprogate_agent

``options`` reads the environment, ``client`` talks to the server, ``execute``
runs one attempt, ``beacon`` beats, ``celery_app`` is the worker. Django-free:
it imports only the libraries the server shares with outsiders
(``benchmarks.lib.sandbox``, ``benchmarks.lib.environment``, ``benchmarks.lib.queues``,
``artifacts.lib``), Celery, kombu and urllib3."""
