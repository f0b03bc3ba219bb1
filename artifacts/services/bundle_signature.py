"""The signature of a bundle's manifest against the uploading organisation's
registered keys, as they stood at upload time: SSHSIG (``manifest.json.sig``),
DSSE (``manifest.json.dsse``) or both, each of which must verify.

A refused key says why: not registered for the organisation
(``signature_key_not_allowed``), ``revoked``, ``expired`` or ``not_yet_valid`` at
the upload. DSSE envelopes carry no key, so every key of the organisation is
tried: the valid ones first, then the others to name the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from accounts.models import Organisation
from artifacts.lib.manifest import DSSE_NAME, SIGNATURE_NAME, BundleInspection
from artifacts.lib.problems import PROBLEM_CODES, BundleProblem
from artifacts.lib.signatures import SignatureError, dsse, sshsig
from artifacts.lib.signatures.sshkeys import SshPublicKey, parse_public_key_line
from artifacts.models import SigningKey
from artifacts.selectors.bundles import (
    signing_key_get_by_fingerprint,
    signing_key_list_for,
    signing_key_status_at,
)


@dataclass(frozen=True)
class SignatureCheck:
    kind: str  # Bundle.SignatureKind value, or "" when there is none to check
    key: SigningKey | None
    problems: tuple[BundleProblem, ...]


def _problem(error: SignatureError, path: str) -> BundleProblem:
    code = error.code if error.code in PROBLEM_CODES else "signature_malformed"
    return BundleProblem(code, error.message, path)


def _key_state(key: SigningKey, at: datetime, path: str) -> list[BundleProblem]:
    state = signing_key_status_at(key, at)
    moment, text = {
        "revoked": (key.revoked_at, "was revoked at"),
        "expired": (key.valid_until, "expired at"),
        "not_yet_valid": (key.valid_from, "is valid only from"),
    }.get(state, (None, ""))
    if moment is None:
        return []
    message = f"The key {key.fingerprint} {text} {moment:%Y-%m-%d %H:%M:%S} UTC."
    return [BundleProblem(f"signature_key_{state}", message, path)]


def _public(key: SigningKey) -> SshPublicKey:
    return parse_public_key_line(key.public_key)


def _check_sshsig(
    organisation: Organisation, manifest: bytes, armored: bytes, at: datetime
) -> tuple[SigningKey | None, list[BundleProblem]]:
    try:
        parsed = sshsig.parse(armored)
    except SignatureError as error:
        return None, [_problem(error, SIGNATURE_NAME)]
    key = signing_key_get_by_fingerprint(organisation, parsed.fingerprint)
    if key is None:
        message = (
            f"The signing key {parsed.fingerprint} is not registered for "
            f"{organisation.slug}."
        )
        problem = BundleProblem("signature_key_not_allowed", message, SIGNATURE_NAME)
        return None, [problem]
    problems = []
    try:
        sshsig.verify(manifest, parsed, public_keys=[_public(key)])
    except SignatureError as error:
        problems.append(_problem(error, SIGNATURE_NAME))
    return key, problems + _key_state(key, at, SIGNATURE_NAME)


def _dsse_signer(
    envelope: bytes, manifest: bytes, keys: list[SigningKey]
) -> SigningKey:
    by_fingerprint = {key.fingerprint: key for key in keys}
    verified = dsse.verify(
        envelope,
        public_keys=[_public(key) for key in keys],
        expected_payload=manifest,
    )
    return by_fingerprint[verified.public_key.fingerprint]


def _check_dsse(
    organisation: Organisation, manifest: bytes, envelope: bytes, at: datetime
) -> tuple[SigningKey | None, list[BundleProblem]]:
    """Keys valid at ``at`` first; then the others, to say why one is refused."""
    keys = list(signing_key_list_for(organisation))
    valid = [k for k in keys if signing_key_status_at(k, at) == "valid"]
    try:
        return _dsse_signer(envelope, manifest, valid), []
    except SignatureError as error:
        first = error
    others = [k for k in keys if k not in valid]
    if first.code != "dsse_signature_invalid" or not others:
        return None, [_problem(first, DSSE_NAME)]
    try:
        key = _dsse_signer(envelope, manifest, others)
    except SignatureError:
        return None, [_problem(first, DSSE_NAME)]
    return key, _key_state(key, at, DSSE_NAME)


def bundle_check_signature(
    *, organisation: Organisation, inspection: BundleInspection, at: datetime
) -> SignatureCheck:
    """Every signature the bundle carries (SSHSIG, DSSE or both) must verify with
    a key of ``organisation`` valid at ``at``. Without manifest bytes there is
    nothing to check (``inspect_bundle`` reported why)."""
    manifest = inspection.manifest_bytes
    if manifest is None:
        return SignatureCheck("", None, ())
    checks = []
    if inspection.signature is not None:
        checks.append(
            ("sshsig", _check_sshsig(organisation, manifest, inspection.signature, at))
        )
    if inspection.dsse is not None:
        dsse_check = _check_dsse(organisation, manifest, inspection.dsse, at)
        checks.append(("dsse", dsse_check))
    if not checks:
        return SignatureCheck("", None, ())
    kind, (key, _) = checks[0]
    problems = tuple(p for _, (_, found) in checks for p in found)
    return SignatureCheck(kind, key, problems)
