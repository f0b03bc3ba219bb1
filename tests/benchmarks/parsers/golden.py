"""The corpus of real tool outputs (tests/fixtures/outputs/, copied from public
tool outputs, verbatim unless README.md says how a file was trimmed; a ``.gz``
file is parsed as its decompressed bytes) and their expected parse
(tests/fixtures/outputs/expected/<file>.json).

Regenerate the expected files after a deliberate change, then review the diff
by hand against the raw files:

    REPROGATE_UPDATE_GOLDEN=1 .venv/bin/python -m pytest \
        tests/benchmarks/parsers/test_golden.py
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any, Final

from benchmarks.lib.parsers import ParseResult, parse, parse_file

OUTPUTS: Final = Path(__file__).resolve().parents[2] / "fixtures" / "outputs"
EXPECTED: Final = OUTPUTS / "expected"
# Every corpus file and the parser that reads it.
LOADGEN: Final = "mlperf-inference_AMD_llama2-70b-99.9_Server_mlperf_log_summary.txt"
KVCACHE: Final = (
    "mlperf-storage-kvcache_lmcache_results_20260106_233959_mlperf_storage_summary.csv"
)
REPORT: Final = "mlperf-storage-v1.0_DDN_cosmoflow-h100_mlperf_storage_report.json"
DLIO: Final = "mlperf-storage-v1.0_DDN_cosmoflow-h100_run1_summary.json"
FIO_WINDOWED_LOG: Final = "fio-3.1_random-read-depth-16_clat.1.log"
VLLM_SERVE: Final = "vllm-serve_Llama-3.3-70B-Instruct_tp8_pp1_sharegpt_qps_inf.json.gz"
CORPUS: Final = {
    "fio-3.1_randread-1-1.json": "fio-json",
    LOADGEN: "mlperf-loadgen",
    KVCACHE: "mlperf-storage",
    REPORT: "mlperf-storage",
    DLIO: "mlperf-storage",
    "vllm-bench-throughput_vllm_baseline_trial1.json": "vllm-bench",
    FIO_WINDOWED_LOG: "fio-lat-log",
    VLLM_SERVE: "vllm-bench",
}


def corpus_files() -> list[str]:
    return sorted(
        p.name for p in OUTPUTS.iterdir() if p.is_file() and p.name != "README.md"
    )


def raw(name: str) -> bytes:
    """A corpus file's bytes (decompressed when it is a ``.gz``)."""
    data = (OUTPUTS / name).read_bytes()
    return gzip.decompress(data) if name.endswith(".gz") else data


def parsed(name: str) -> ParseResult:
    if name.endswith(".gz"):
        return parse(CORPUS[name], raw(name), source_name=name.removesuffix(".gz"))
    return parse_file(CORPUS[name], OUTPUTS / name)


def as_json(result: ParseResult) -> Any:
    """The result as plain JSON (what the golden files hold)."""
    return json.loads(json.dumps(result.to_dict()))


def expected(name: str) -> Any:
    return json.loads((EXPECTED / f"{name}.json").read_text("utf-8"))


def write_expected(name: str, result: ParseResult) -> None:
    text = json.dumps(as_json(result), indent=1, sort_keys=True, ensure_ascii=False)
    (EXPECTED / f"{name}.json").write_text(text + "\n", "utf-8")
