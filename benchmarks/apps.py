from __future__ import annotations

from django.apps import AppConfig


class BenchmarksConfig(AppConfig):
    name = "benchmarks"

    def ready(self) -> None:
        # procurement's fidelity matrix reads the lab's captures through its
        # registry (it must not import benchmarks); benchmarks fills it here.
        from benchmarks.selectors.procurement_hooks import run_captures
        from procurement.selectors.fidelity_sources import captured_source

        captured_source.register(run_captures)
