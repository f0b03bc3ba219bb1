"""gunicorn settings for production (behind nginx)."""

from __future__ import annotations

import os

from config.logs import gunicorn_logconfig

bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")
workers = int(os.environ.get("GUNICORN_WORKERS", "3"))
timeout = 120  # bundle uploads stream through; nginx buffers the client
accesslog = "-"
# Access and error lines as JSON objects (config/logs.py) or plain text, as the
# app's own (REPROGATE_LOG_FORMAT, json by default in production).
logconfig_dict = gunicorn_logconfig(os.environ.get("REPROGATE_LOG_FORMAT", "json"))
forwarded_allow_ips = os.environ.get("GUNICORN_FORWARDED_ALLOW_IPS", "127.0.0.1")
