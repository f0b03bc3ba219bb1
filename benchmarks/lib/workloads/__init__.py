"""Workloads and synthetic traces: workload definitions
(``definitions``) and the deterministic trace generator (``tracegen``, stdlib
only, copied byte for byte into the example bundles as ``harness/tracegen.py``).
No Django here.

    python -m benchmarks.lib.workloads generate PROFILE.json --seed 7 -o trace.jsonl
"""

from __future__ import annotations

from benchmarks.lib.workloads.definitions import (
    Workload,
    workload_from_dict,
    workload_load,
)
from benchmarks.lib.workloads.tracegen import (
    ProfileError,
    TraceProfile,
    TraceRequest,
    generate,
    read_trace,
    write_trace,
)

__all__ = [
    "ProfileError",
    "TraceProfile",
    "TraceRequest",
    "Workload",
    "generate",
    "read_trace",
    "workload_from_dict",
    "workload_load",
    "write_trace",
]
