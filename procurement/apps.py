from __future__ import annotations

from django.apps import AppConfig


class ProcurementConfig(AppConfig):
    name = "procurement"
