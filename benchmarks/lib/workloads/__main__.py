"""``python -m benchmarks.lib.workloads generate PROFILE.json --seed N -o
trace.jsonl``."""

from __future__ import annotations

import sys

from benchmarks.lib.workloads.cli import main

sys.exit(main())
