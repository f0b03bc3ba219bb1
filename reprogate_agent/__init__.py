"""The lab host's runner agent: a Celery worker on its pool's queue that talks to
the server's runner API over HTTPS with a host token, and holds no database,
storage or Django secret (``python -m reprogate_agent``)."""
