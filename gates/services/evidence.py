"""The evidence package of a gate evaluation (docs/reports.md, "Checking a
report"): the evaluation's deposit (plan.json, results.json, evaluation.json),
the deposit of the bundle it judged, the deposits of the campaign's runs it
judged (outputs, runner artefacts such as scenario.json and spans.jsonl,
host-signed statements naming each run's seed and anti-gaming checks), for a
criterion held to the buyer's baseline the deposits of the baseline runs in its
results document and of the buyer's bundle they ran, the report
deposits about it (its benchmark report and the acceptance certificates of
decisions resting on it, those that are ready), their inclusion proofs, the
signed checkpoint, the log key, the vendor keys, the statement key as
``keys/reports.pub`` and a README.

Preparing one is the download's state change, as for a bundle's package
(``artifacts.services.evidence``): an ``evidence.downloaded`` escrow event whose
leaf binds README.txt, the keys and ``keys/reports.pub``, and one audit row.
``reprogate evidence verify`` re-evaluates the gate and checks the reports
(``gates.lib.engine.evidence``)."""

from __future__ import annotations

import json
import logging
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from accounts.exceptions import ApplicationError
from accounts.models import Organisation, Role
from accounts.selectors.users import organisation_ids_for
from accounts.services.actor import Actor
from artifacts.lib.evidence.layout import BLOBS_DIR
from artifacts.lib.signatures.statement import public_key_pem
from artifacts.lib.transparency.keyfile import LogKeyError, load_private_key
from artifacts.models import Deposit
from artifacts.selectors.escrow import bundle_deposits
from artifacts.selectors.evidence_package import EvidencePackage
from artifacts.services.evidence import PackageFile, evidence_package_build
from benchmarks.services.evidence import (
    campaign_run_deposits,
    run_steps,
    runs_evidence_deposits,
)
from gates.conf import report_settings
from gates.lib.engine.evidence import REPORTS_KEY
from gates.models import Evaluation, Report

logger = logging.getLogger(__name__)

STEPS = f"""\
GATE EVALUATION CHECKS (reprogate evidence verify runs these too)

7. Re-evaluation. An "evaluation" deposit's leaf names its plan.json,
   results.json and evaluation.json blobs, their digests (plan_sha256,
   results_sha256, evaluation_sha256), the gate and the verdict. The published
   engine must give the evaluation document back byte for byte:

     printf %s "$(reprogate gate evaluate --plan {BLOBS_DIR}PLAN \\
       --results {BLOBS_DIR}RESULTS --gate GATE)" | cmp - {BLOBS_DIR}EVALUATION

8. Reports. A "report" deposit (a benchmark report or an acceptance
   certificate) names report.pdf and statement.json. The PDF's SHA-256 is the
   leaf's pdf_sha256; any PDF reader (or `pdfsig report.pdf`) shows its PAdES
   signature. statement.json is a DSSE envelope of an in-toto Statement v1
   (test-result predicate) signed with the installation's Ed25519 key,
   {REPORTS_KEY}: the signature is over PAE(payloadType, payload) =
   "DSSEv1 <len(type)> <type> <len(payload)> <payload>" (the payload
   base64-decoded). Its subjects name report.pdf with the PDF's SHA-256 and
   evaluation.json with the evaluation's; its result is PASSED for a PASS,
   WARNED for a WARN, FAILED otherwise.

9. {REPORTS_KEY} is named by the download receipt (step 6); compare it with
   the key the server publishes (GET /api/v1/reports/key).

Reports are made after the evaluation: the package holds the report deposits
that were ready when it was downloaded (none while a report is still being
rendered); download it again later for the rest.
"""


def _report_deposits(evaluation: Evaluation) -> list[Deposit]:
    """The deposits of the ready reports about ``evaluation``: its benchmark
    report and the certificates of decisions on it."""
    reports = Report.objects.filter(evaluation=evaluation, deposit__isnull=False)
    return [
        report.deposit
        for report in reports.select_related("deposit__organisation", "deposit__rfp")
        if report.deposit is not None
    ]


def reports_key_file() -> PackageFile | None:
    """``keys/reports.pub``, the statement public key (PEM), if the installation
    has one: loaded, never created here (the first report creates it). Every
    evidence package holds it (registered in ``GatesConfig.ready()``)."""
    path = report_settings().statement_key_path
    if not path.exists():
        return None
    try:
        key: Ed25519PrivateKey = load_private_key(path, create=False)
    except LogKeyError as error:
        logger.error("evidence package: the statement key is unusable: %s", error)
        return None
    description = "the key the signed reports' statements verify with"
    return PackageFile(REPORTS_KEY, public_key_pem(key), description)


def baseline_run_ids(evaluation: Evaluation) -> list[str]:
    """The ids of the baseline runs its results document carries (``"role":
    "baseline"``: a criterion held to the buyer's baseline), in document order."""
    results: Any = json.loads(evaluation.results_document or "{}")
    runs = results.get("runs") if isinstance(results, dict) else None
    listed = runs if isinstance(runs, list) else []
    return [
        str(run.get("id"))
        for run in listed
        if isinstance(run, dict) and run.get("role") == "baseline"
    ]


def _trail(actor: Actor, evaluation: Evaluation) -> Organisation:
    """The vendor's own download goes to its trail, others to the buyer's."""
    own = organisation_ids_for(actor, Role.VENDOR, Role.ADMIN) if actor else set()
    if evaluation.vendor_organisation_id in own:
        return evaluation.vendor_organisation
    return evaluation.rfp.buyer_organisation


def evaluation_evidence_prepare(
    *, evaluation: Evaluation, actor: Actor
) -> EvidencePackage:
    """Log the download and assemble the evaluation's package (the caller
    checked that ``actor`` may have it)."""
    if evaluation.deposit is None:
        raise ApplicationError(
            "This evaluation has no escrow deposit.", code="not_deposited"
        )
    bundle = evaluation.campaign.bundle
    deposits = sorted(
        {
            d.pk: d
            for d in [
                evaluation.deposit,
                *bundle_deposits(bundle),
                *campaign_run_deposits(evaluation.campaign),
                *runs_evidence_deposits(baseline_run_ids(evaluation)),
                *_report_deposits(evaluation),
            ]
        }.values(),
        key=lambda d: d.log_index,
    )
    rfp, vendor = evaluation.rfp.reference, evaluation.vendor_organisation.slug
    return evidence_package_build(
        deposits=deposits,
        actor=actor,
        target=evaluation,
        organisation=_trail(actor, evaluation),
        heading=(
            f"Gate evaluation {evaluation.public_id} (gate {evaluation.gate} of "
            f"{vendor} on {rfp}, plan v{evaluation.plan.version}, "
            f"{evaluation.verdict})"
        ),
        filename=(
            f"evidence-{rfp}-{vendor}-{evaluation.gate}-"
            f"{evaluation.evaluation_sha256[:12]}.zip"
        ),
        bundle=bundle,
        steps=STEPS + "\n" + run_steps(10),
        event_data={"evaluation": str(evaluation.public_id)},
        audit_data={
            "rfp": rfp,
            "vendor": vendor,
            "gate": evaluation.gate,
            "evaluation": str(evaluation.public_id),
        },
    )
