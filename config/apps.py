from __future__ import annotations

from django.apps import AppConfig


class ConfigAppConfig(AppConfig):
    """The settings package as an app: its start-up checks (``config.checks``) and
    the installation's own commands (``manage.py backup_check``)."""

    name = "config"
    label = "reprogate_config"
    verbose_name = "ReproGate installation"

    def ready(self) -> None:
        from config import checks  # noqa: F401 - registers the checks
