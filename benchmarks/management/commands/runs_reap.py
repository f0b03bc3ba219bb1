from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand

from benchmarks.services.reaper import run_reap


class Command(BaseCommand):
    help = (
        "Re-queue or fail runs whose worker stopped reporting (what the beat task "
        "benchmarks.reap_runs does every 30 s)."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(json.dumps(run_reap().as_dict()))
