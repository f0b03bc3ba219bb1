"""The example bundles are self-contained: each ships a byte-identical copy of
the trace generator (benchmarks/lib/workloads/tracegen.py), and both vendors run the
same harness code; only harness/config.json (the vendor's tier model) and the
claims differ. After changing the generator: ``cp
benchmarks/lib/workloads/tracegen.py examples/*/harness/``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VENDORS = ("acme-flash", "bolt-storage")
SHARED = (
    "harness/run.sh",
    "harness/harness.py",
    "harness/kvsim.py",
    "harness/nbdprobe.py",
)


@pytest.mark.parametrize("vendor", VENDORS)
def test_bundled_trace_generator_is_the_packaged_one(vendor: str) -> None:
    bundled = ROOT / "examples" / vendor / "harness" / "tracegen.py"

    assert (
        bundled.read_bytes()
        == (ROOT / "benchmarks/lib/workloads/tracegen.py").read_bytes()
    )


@pytest.mark.parametrize("path", SHARED)
def test_both_vendors_run_the_same_harness_code(path: str) -> None:
    acme, bolt = (ROOT / "examples" / vendor / path for vendor in VENDORS)

    assert acme.read_bytes() == bolt.read_bytes()


@pytest.mark.parametrize("vendor", VENDORS)
def test_harness_config_names_a_bundled_workload(vendor: str) -> None:
    source = ROOT / "examples" / vendor
    config = json.loads((source / "harness/config.json").read_text())

    assert (source / config["workload"]).is_file()
    assert set(config) >= {"workload", "warmup_s", "fio", "engine", "tiers"}


def test_vendors_differ_in_tier_model_but_share_the_engine() -> None:
    acme, bolt = (
        json.loads((ROOT / "examples" / v / "harness/config.json").read_text())
        for v in VENDORS
    )

    assert acme["engine"] == bolt["engine"]
    assert acme["tiers"] != bolt["tiers"]


@pytest.mark.parametrize("vendor", VENDORS)
def test_no_compiled_files_in_the_bundle_sources(vendor: str) -> None:
    # The build bundles every file: a __pycache__ here would end up signed.
    source = ROOT / "examples" / vendor

    assert not [
        p for p in source.rglob("*") if p.suffix == ".pyc" or p.name == "__pycache__"
    ]
