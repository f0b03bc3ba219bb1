"""The signed report PDFs of a bundle being ingested (``artifacts.lib.reports``):
each PDF of a kind that promises a signature (``SIGNED_KINDS``, ``report``) is
checked in a limited child process against the installation's trust roots,
and the in-toto statement beside it (``<pdf>.intoto.json`` / ``<pdf>.dsse``),
when there is one, against the organisation's signing keys valid at the upload.

The verdicts (path -> dict) go into the completeness report: a report counts
only when its signature validates, and an invalid one is a named problem
there, never a reason to reject the bundle. Nothing is written here.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

from accounts.models import Organisation
from artifacts.conf import bundle_report_limits, bundle_report_trust_roots_pem
from artifacts.lib.completeness import SIGNED_KINDS
from artifacts.lib.manifest import Manifest
from artifacts.lib.reports import statement
from artifacts.lib.reports.bounded import check_pdf_bounded, size_refused
from artifacts.lib.signatures import SignatureError
from artifacts.lib.signatures.sshkeys import SshPublicKey, parse_public_key_line
from artifacts.lib.spool import Spool, Spooled
from artifacts.selectors.bundles import signing_key_list_valid_at

MAX_CHECKED_PDFS: Final = 16


def _public_keys(organisation: Organisation, at: datetime) -> list[SshPublicKey]:
    keys = []
    for key in signing_key_list_valid_at(organisation, at):
        try:
            keys.append(parse_public_key_line(key.public_key))
        except SignatureError:
            continue  # registered keys were parsed once; skip one that no longer is
    return keys


def _not_checked(index: int) -> dict[str, Any]:
    message = (
        f"Only the first {MAX_CHECKED_PDFS} report PDFs are checked; this one "
        f"(number {index + 1}) was not."
    )
    return {
        "status": "unreadable",
        "signatures": [],
        "problem": {"code": "report_not_checked", "message": message},
    }


def _statement(
    path: str, pdf: Spooled, spool: Spool, keys: list[SshPublicKey]
) -> dict[str, Any] | None:
    """The verdict on the statement beside the PDF at ``path``, if there is one."""
    for candidate in statement.statement_paths(path):
        found = spool.files.get(candidate)
        if found is None:
            continue
        refused = statement.size_refused(found.digest.size, candidate)
        return refused or statement.check_statement(
            found.read(), path=candidate, pdf_sha256=pdf.digest.sha256,
            public_keys=keys,
        )  # fmt: skip
    return None


def bundle_check_reports(
    *, organisation: Organisation, manifest: Manifest, spool: Spool, at: datetime
) -> dict[str, dict[str, Any]]:
    """Path -> verdict of every PDF of a signed kind in the bundle."""
    pdfs = [
        f.path
        for f in manifest.files
        if f.kind in SIGNED_KINDS and f.path.lower().endswith(".pdf")
    ]
    roots, limits = bundle_report_trust_roots_pem(), bundle_report_limits()
    keys = _public_keys(organisation, at) if pdfs else []
    verdicts: dict[str, dict[str, Any]] = {}
    for index, path in enumerate(pdfs):
        spooled = spool.files.get(path)
        if spooled is None:
            continue  # every listed file was spooled before an accepted verdict
        if index >= MAX_CHECKED_PDFS:
            verdicts[path] = _not_checked(index)
            continue
        verdict = size_refused(spooled.digest.size, limits) or check_pdf_bounded(
            spooled.read(), trust_roots_pem=roots, limits=limits
        )
        about = _statement(path, spooled, spool, keys)
        verdicts[path] = {**verdict, **({"statement": about} if about else {})}
    return verdicts
