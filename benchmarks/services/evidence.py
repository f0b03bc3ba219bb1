"""The evidence package of a campaign (docs/reports.md, "Checking the lab
runs"): the deposit of the bundle it ran and every run's deposit (its outputs,
the host-signed statement, the environment capture the statement names, the
host's key and the runner artefacts), their inclusion proofs, the signed
checkpoint, the log and vendor keys and a README. ``reprogate evidence verify``
checks every run's statement against its host key and names any altered output,
artefact or statement (``benchmarks.lib.evidence``).

Preparing one is the download's state change, as for a bundle's package
(``artifacts.services.evidence``): an ``evidence.downloaded`` escrow event and
one audit row."""

from __future__ import annotations

from collections.abc import Iterable

from accounts.exceptions import StateConflict
from accounts.models import Organisation, Role
from accounts.selectors.users import organisation_ids_for
from accounts.services.actor import Actor
from artifacts.models import Deposit
from artifacts.selectors.escrow import bundle_deposits
from artifacts.selectors.evidence_package import EvidencePackage
from artifacts.services.evidence import evidence_package_build
from benchmarks.models import Campaign, Run


def run_steps(first: int) -> str:
    """README.txt's steps for the runs' deposits, numbered from ``first``."""
    return _STEPS.format(first, first + 1)


_STEPS = """\
LAB RUN CHECKS (reprogate evidence verify runs these too)

{0}. Runs. A "run_output" deposit's leaf names the run's output files (role
   "output") and, as documents, statement.json, environment.json,
   host_key.pem and the runner artefacts (runner/<name>: telemetry,
   spans.jsonl, scenario.json).
   statement.json is a DSSE envelope of an in-toto Statement v1 (predicateType
   https://reprogate.dev/lab-run/v1) signed with the lab host's Ed25519 key,
   host_key.pem: the signature is over PAE(payloadType, payload) =
   "DSSEv1 <len(type)> <type> <len(payload)> <payload>" (the payload
   base64-decoded). Its subjects are outputs/<path>, environment.json and
   runner/<name>, each with the SHA-256 of the blob the leaf names; its
   predicate names the run, attempt, campaign, scenario, repetition, policy,
   isolation, drift, scenario actions, seed, exit status, start and end, and
   the anti-gaming checks the host made.

{1}. host_key.pem's fingerprint (SHA256: + unpadded base64 of the SHA-256 of the
   raw 32-byte key) is the leaf's host_key_fingerprint; compare the key with the
   one the server publishes for the host (GET /api/v1/lab/hosts/<host>/key).
"""


def run_deposits(runs: list[Run]) -> list[Deposit]:
    """The escrow deposits of ``runs`` that have one."""
    return [run.output_deposit for run in runs if run.output_deposit is not None]


def campaign_run_deposits(campaign: Campaign) -> list[Deposit]:
    runs = list(
        Run.objects.filter(campaign=campaign, output_deposit__isnull=False)
        .select_related("output_deposit__organisation", "output_deposit__rfp")
        .order_by("position")
    )
    return run_deposits(runs)


def runs_evidence_deposits(run_ids: Iterable[str]) -> list[Deposit]:
    """The escrow deposits of the runs of these public ids that have one, and
    of the bundles they ran (a gate evaluation's baseline runs, from the buyer's
    own bundle), in log order."""
    runs = list(
        Run.objects.filter(public_id__in=list(run_ids), output_deposit__isnull=False)
        .select_related("output_deposit", "campaign__bundle")
        .order_by("position")
    )
    bundles = {run.campaign.bundle_id: run.campaign.bundle for run in runs}
    deposits = {
        d.pk: d
        for d in [
            *run_deposits(runs),
            *(d for b in bundles.values() for d in bundle_deposits(b)),
        ]
    }
    return sorted(deposits.values(), key=lambda d: d.log_index)


def _trail(actor: Actor, campaign: Campaign) -> Organisation:
    """The vendor's own download goes to its trail, the lab's to the lab's,
    others to the buyer's."""
    bundle = campaign.bundle
    own = organisation_ids_for(actor, Role.VENDOR, Role.ADMIN) if actor else set()
    if bundle.organisation_id in own:
        return bundle.organisation
    labs = organisation_ids_for(actor, Role.LABOPS, Role.ADMIN) if actor else set()
    if campaign.pool.lab_organisation_id in labs:
        return campaign.pool.lab_organisation
    return campaign.rfp.buyer_organisation


def campaign_evidence_prepare(*, campaign: Campaign, actor: Actor) -> EvidencePackage:
    """Log the download and assemble the campaign's package (the caller
    checked that ``actor`` may have it)."""
    runs = campaign_run_deposits(campaign)
    if not runs:
        raise StateConflict(
            "No run of this campaign has finished with a deposit yet.",
            code="not_deposited",
        )
    bundle = campaign.bundle
    deposits = sorted(
        {d.pk: d for d in [*bundle_deposits(bundle), *runs]}.values(),
        key=lambda d: d.log_index,
    )
    rfp = campaign.rfp.reference
    return evidence_package_build(
        deposits=deposits,
        actor=actor,
        target=campaign,
        organisation=_trail(actor, campaign),
        heading=(
            f"Campaign {campaign.public_id} (bundle {bundle.public_id} of "
            f"{bundle.organisation.slug} on {rfp}, pool {campaign.pool.name}, "
            f"{len(runs)} runs deposited)"
        ),
        filename=f"evidence-{rfp}-campaign-{str(campaign.public_id)[:8]}.zip",
        bundle=bundle,
        steps=run_steps(7),
        event_data={"campaign": str(campaign.public_id)},
        audit_data={"rfp": rfp, "campaign": str(campaign.public_id)},
    )
