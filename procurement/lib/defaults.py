"""What a new RFP starts with: the checklist that reproducible procurement demands.

``default_configuration()`` has the same shape as ``RfpTemplate.data`` (see
``procurement.services.templates.rfp_snapshot``), so "new blank" and "new from
template" are one code path."""

from __future__ import annotations

import copy
from typing import Any, Final

CONFIGURATION_VERSION: Final = 1

DEFAULT_ARTIFACTS: Final[list[dict[str, Any]]] = [
    {
        "kind": "workload",
        "title": "Workload definitions",
        "guidance": (
            "Model identifiers with content hashes (SHA-256 of the weights), the "
            "tokenizer, and the request-distribution profile (prompt and output "
            "length distributions, arrival process) — or a synthetic trace "
            "generator with its seed."
        ),
        "mandatory": True,
    },
    {
        "kind": "environment",
        "title": "Environment manifests",
        "guidance": (
            "OS and kernel, GPU and NIC drivers, SSD and NIC firmware, NVMe-oF "
            "transport (RDMA or TCP) and its settings, and the physical topology "
            "(hosts, GPUs per host, switches, targets)."
        ),
        "mandatory": True,
    },
    {
        "kind": "harness",
        "title": "Test harness scripts",
        "guidance": (
            "Scripts that run the benchmark end to end: warm- and cold-cache runs, "
            "concurrency sweeps and batch-size sweeps, with every parameter on the "
            "command line or in a checked-in file."
        ),
        "mandatory": True,
    },
    {
        "kind": "trace",
        "title": "Raw and processed traces",
        "guidance": (
            "Per-request raw traces and the processed results derived from them, "
            "plus the script that derives one from the other."
        ),
        "mandatory": True,
    },
    {
        "kind": "cost_model",
        "title": "Cost-model inputs",
        "guidance": (
            "Energy draw under load, rack units, amortised hardware cost and "
            "support cost, in the units of the buyer's TCO formula."
        ),
        "mandatory": True,
    },
    {
        "kind": "report",
        "title": "Signed benchmark reports",
        "guidance": (
            "The benchmark report, signed with a registered key and time-stamped, "
            "naming the hashes of every artifact above."
        ),
        "mandatory": True,
    },
    {
        "kind": "container_image",
        "title": "Container images",
        "guidance": (
            "The images the harness runs in: an OCI image layout inside the bundle, "
            "or an image reference pinned by its digest."
        ),
        "mandatory": False,
    },
    {
        "kind": "iac",
        "title": "Infrastructure-as-code templates",
        "guidance": (
            "Terraform, Kubernetes manifests, Helm charts or Ansible playbooks that "
            "stand the tested system up."
        ),
        "mandatory": False,
    },
    {
        "kind": "runbook",
        "title": "Operational runbook",
        "guidance": (
            "How the buyer's operators install, upgrade, roll back and troubleshoot "
            "the system after hand-off."
        ),
        "mandatory": False,
    },
    {
        "kind": "sbom",
        "title": "Software bill of materials",
        "guidance": "SPDX or CycloneDX JSON listing every component and its licence.",
        "mandatory": False,
    },
]

PERCENTILES: Final = "p50,p95,p99,p99.9"

DEFAULT_METRICS: Final[list[dict[str, Any]]] = [
    {"name": "ttft_ms", "stats": PERCENTILES, "description": "Time to first token"},
    {"name": "tpot_ms", "stats": PERCENTILES, "description": "Time per output token"},
    {"name": "itl_ms", "stats": PERCENTILES, "description": "Inter-token latency"},
    {
        "name": "output_token_throughput_tps",
        "stats": "mean,p50",
        "description": "Output tokens per second, whole cluster",
    },
    {
        "name": "read_clat_us",
        "stats": PERCENTILES,
        "description": "Storage read completion latency",
    },
    {"name": "gpu_util_pct", "stats": "mean,p50", "description": "GPU utilisation"},
    {
        "name": "ssd_write_amplification",
        "stats": "mean",
        "description": "SSD write amplification factor over the run",
    },
    {
        "name": "cache_hit_rate",
        "stats": "",
        "series": True,
        "description": "KV-cache hit rate as a curve over time",
    },
    {
        "name": "model_load_s",
        "stats": "p50,max",
        "description": "Model load time, cold start",
    },
]

DEFAULT_CRITERIA: Final[list[dict[str, Any]]] = [
    {
        "name": "Reproducibility completeness",
        "description": "Every required artifact present, hashed and re-runnable.",
        "weight": 25,
    },
    {
        "name": "Hardware/software transparency",
        "description": "Environment manifests complete down to firmware and topology.",
        "weight": 15,
    },
    {
        "name": "Workload fidelity",
        "description": "How closely the benchmarked workload matches ours.",
        "weight": 15,
    },
    {
        "name": "Metric coverage",
        "description": "Required metrics and percentiles reported, with raw data.",
        "weight": 15,
    },
    {
        "name": "Gate-based acceptance readiness",
        "description": "Claims stated as thresholds that an acceptance gate can test.",
        "weight": 10,
    },
    {
        "name": "TCO",
        "description": "Cost per year and per million tokens under our TCO formula.",
        "weight": 20,
    },
]

DEFAULT_TERMS: Final[dict[str, Any]] = {
    "escrow_clause": (
        "The vendor deposits every benchmark artifact (workloads, manifests, harness, "
        "traces, cost-model inputs and signed reports) in the buyer's escrow at "
        "submission. The buyer and its auditors may retrieve and re-run them for the "
        "life of the contract."
    ),
    "acceptance_clause": (
        "Delivery is accepted in gates. At each gate the buyer's lab re-runs the "
        "escrowed harness on the delivered system; a gate passes when every claimed "
        "metric is met within the tolerance band. Stop-loss: two failed gates in a "
        "row let the buyer halt the roll-out and return the undeployed equipment at "
        "the vendor's cost."
    ),
    "retest_clause": (
        "When a gate fails, the vendor funds one re-test in the buyer's lab within 30 "
        "days. Results within the tolerance band of the claim count as met."
    ),
    "retest_tolerance_pct": "10.00",
    "retest_vendor_funded": True,
    "audit_rights_clause": (
        "The buyer and any third-party auditor it appoints may re-run the escrowed "
        "benchmarks at any time during the contract, and inspect the environment "
        "they ran in."
    ),
    "standstill_days": 10,
}

DEFAULT_WORKLOAD_REQUIREMENTS: Final = (
    "- Model families and sizes: a dense decoder of about 7B parameters and a "
    "480B-class mixture-of-experts decoder.\n"
    "- Concurrency: sweeps from 1 to 256 concurrent streams, with bursty arrivals.\n"
    "- Multi-tenancy: two tenants sharing the cache tier; report the interference "
    "each causes the other."
)


def default_configuration() -> dict[str, Any]:
    """A fresh copy of the defaults, in the template data shape."""
    return copy.deepcopy(
        {
            "version": CONFIGURATION_VERSION,
            "description": "",
            "min_bids": 1,
            "addendum_extension_days": 4,
            "workload_requirements": DEFAULT_WORKLOAD_REQUIREMENTS,
            "terms": DEFAULT_TERMS,
            "artifacts": DEFAULT_ARTIFACTS,
            "metrics": DEFAULT_METRICS,
            "criteria": DEFAULT_CRITERIA,
        }
    )
