from __future__ import annotations

from django.apps import AppConfig


class BenchmarksConfig(AppConfig):
    name = "benchmarks"
