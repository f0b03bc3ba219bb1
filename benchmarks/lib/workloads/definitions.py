"""Workload definitions: the model a workload serves (family and size,
tokenizer) and the request-distribution profile of its traffic, read from the
workload files bundles carry (``workloads/*.json``):

    {"name": "llama70b-chat",
     "model": {"id": "meta-llama/Llama-3.1-70B-Instruct", "family": "llama-3.1",
               "size": "70B", "tokenizer": "meta-llama/Llama-3.1-70B-Instruct", ...},
     "requests": {<a trace profile, see tracegen>, "seed": 7}, ...}

Other keys (description, serving settings, model revision and dtype) are kept
as they are and not interpreted here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.lib.workloads.tracegen import NAME_RE, ProfileError, TraceProfile


@dataclass(frozen=True)
class Workload:
    name: str
    model_id: str
    model_family: str
    model_size: str
    tokenizer: str
    seed: int  # the workload's base seed; scenarios derive theirs from it
    requests: Mapping[str, Any]  # the trace profile, resolved by profile()

    def profile(
        self, *, concurrency: int | None = None, **overrides: Any
    ) -> TraceProfile:
        """The trace profile; ``concurrency`` resolves ``rate_rps_per_stream``,
        ``overrides`` replace request keys (``count``, ``duration_s`` …)."""
        requests = {**self.requests, **overrides}
        return TraceProfile.from_dict(
            {"name": self.name, "requests": requests}, concurrency=concurrency
        )


def workload_from_dict(data: Any) -> Workload:
    """A workload from a decoded workload file; every problem is collected into
    one ``ProfileError``. The profile itself is checked too (rate per stream
    resolved with a concurrency of 1)."""
    if not isinstance(data, dict):
        raise ProfileError(["must be a JSON object"])
    problems: list[str] = []
    model = data.get("model")
    model = model if isinstance(model, dict) else {}
    requests = data.get("requests")
    requests = requests if isinstance(requests, dict) else {}
    texts = {}
    for where, source, key in [
        ("name", data, "name"),
        ("model.id", model, "id"),
        ("model.family", model, "family"),
        ("model.size", model, "size"),
        ("model.tokenizer", model, "tokenizer"),
    ]:
        value = source.get(key)
        if not (isinstance(value, str) and value.strip() and len(value) <= 200):
            problems.append(f"{where}: required text of at most 200 characters")
        texts[where] = str(value)
    name = data.get("name")
    if isinstance(name, str) and name.strip() and not NAME_RE.match(name):
        problems.append("name: must be a short name of letters, digits, . _ -")
    seed = requests.get("seed")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        problems.append("requests.seed: required, a non-negative integer")
    try:
        TraceProfile.from_dict({"name": "check", "requests": requests}, concurrency=1)
    except ProfileError as error:
        problems += error.problems
    if problems:
        raise ProfileError(problems)
    return Workload(
        name=texts["name"],
        model_id=texts["model.id"],
        model_family=texts["model.family"],
        model_size=texts["model.size"],
        tokenizer=texts["model.tokenizer"],
        seed=int(seed),  # type: ignore[arg-type]
        requests=dict(requests),
    )


def workload_load(path: Path) -> Workload:
    """A workload file; ``OSError`` or ``ProfileError`` (bad JSON included)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as error:
        raise ProfileError([f"not JSON: {error}"]) from error
    return workload_from_dict(data)
