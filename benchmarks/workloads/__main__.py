"""``python -m benchmarks.workloads generate PROFILE.json --seed N -o trace.jsonl``."""

from __future__ import annotations

import sys

from benchmarks.workloads.cli import main

sys.exit(main())
