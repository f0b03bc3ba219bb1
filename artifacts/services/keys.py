"""Signing keys: a vendor registers and revokes the OpenSSH keys its bundles are
signed with, and exports them as an ``ssh-keygen`` allowed_signers file; a buyer
organisation does the same for the bundles of its own baseline harness.

A public key belongs to the organisation that registered it first, for good: no
other organisation can register it, even once it is revoked (an exported
allowed_signers file would otherwise vouch for one organisation's key under
another's name, and a revoked key's past signatures keep naming its owner). The
database holds this too (``artifacts_signingkey_fingerprint_unique``)."""

from __future__ import annotations

from datetime import UTC, datetime

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction

from accounts.exceptions import ApplicationError, Problem, StateConflict
from accounts.models import Organisation
from accounts.selectors import clock
from accounts.services.audit import audit_record
from artifacts.lib.signatures import NAMESPACE, SignatureError
from artifacts.lib.signatures.sshkeys import SshPublicKey, parse_public_key_line
from artifacts.models import SigningKey
from artifacts.selectors.bundles import (
    signing_key_list_for,
    signing_key_list_valid_at,
    signing_key_owner_id,
)

# Vendors sign their bids' bundles; a buyer signs its own baseline bundles.
SIGNING_KINDS = (Organisation.Kind.VENDOR, Organisation.Kind.BUYER)


def _refuse(code: str, message: str, path: str) -> ApplicationError:
    return ApplicationError(message, code=code, problems=[Problem(code, message, path)])


def _parse(public_key_line: str) -> SshPublicKey:
    try:
        return parse_public_key_line(public_key_line)
    except SignatureError as error:
        raise _refuse(error.code, error.message, "public_key") from None


def _check_window(valid_from: datetime, valid_until: datetime | None) -> None:
    if valid_until is not None and valid_until <= valid_from:
        raise _refuse(
            "key_window_invalid", "valid_until must be after valid_from.", "valid_until"
        )


def _duplicate(fingerprint: str) -> ApplicationError:
    return _refuse(
        "key_duplicate",
        f"Your organisation already registered the key {fingerprint} "
        "(revoked keys cannot be registered again).",
        "public_key",
    )


def _registered_elsewhere(fingerprint: str) -> StateConflict:
    message = (
        f"The key {fingerprint} is registered by another organisation: each "
        "organisation signs with keys of its own (generate one with ssh-keygen -t "
        "ed25519)."
    )
    code = "key_registered_elsewhere"
    return StateConflict(
        message, code=code, problems=[Problem(code, message, "public_key")]
    )


def _refusal(key: SigningKey) -> ApplicationError | None:
    owner = signing_key_owner_id(key.fingerprint)
    if owner is None:
        return None
    if owner == key.organisation_id:
        return _duplicate(key.fingerprint)
    return _registered_elsewhere(key.fingerprint)


def _save_new(key: SigningKey) -> SigningKey:
    """Insert, turning a concurrent duplicate into the same refusal."""
    if refusal := _refusal(key):
        raise refusal
    try:
        with transaction.atomic():
            key.save()
    except IntegrityError:
        raise _refusal(key) or _duplicate(key.fingerprint) from None
    return key


@transaction.atomic
def signing_key_register(
    *,
    organisation: Organisation,
    public_key_line: str,
    valid_from: datetime | None = None,
    valid_until: datetime | None = None,
    actor: User | None,
) -> SigningKey:
    if organisation.kind not in SIGNING_KINDS:
        raise ApplicationError(
            "Only vendor and buyer organisations register signing keys.",
            code="not_signer",
        )
    parsed = _parse(public_key_line)
    valid_from = valid_from or clock.now()
    _check_window(valid_from, valid_until)
    key = _save_new(
        SigningKey(
            organisation=organisation,
            key_type=parsed.key_type,
            public_key=parsed.openssh,
            comment=parsed.comment,
            fingerprint=parsed.fingerprint,
            valid_from=valid_from,
            valid_until=valid_until,
            registered_by=actor,
        )
    )
    audit_record(
        actor=actor,
        action="signing_key.registered",
        target=key,
        organisation=organisation,
        data={
            "fingerprint": key.fingerprint,
            "key_type": key.key_type,
            "comment": key.comment,
            "valid_until": valid_until,
        },
    )
    return key


@transaction.atomic
def signing_key_revoke(*, key: SigningKey, actor: User | None) -> SigningKey:
    """From now on the key verifies no new upload; past verdicts stand."""
    key = SigningKey.objects.select_for_update().get(pk=key.pk)
    if key.revoked_at is not None:
        raise StateConflict(
            f"The key {key.fingerprint} was already revoked.",
            code="key_already_revoked",
        )
    key.revoked_at, key.revoked_by = clock.now(), actor
    key.save(update_fields=["revoked_at", "revoked_by", "updated_at"])
    audit_record(
        actor=actor,
        action="signing_key.revoked",
        target=key,
        organisation=key.organisation,
        data={"fingerprint": key.fingerprint},
    )
    return key


def _timestamp(moment: datetime) -> str:
    """``YYYYMMDDHHMMSSZ`` (UTC), quoted as OpenSSH 9.2 requires."""
    return f'"{moment.astimezone(UTC):%Y%m%d%H%M%S}Z"'


def allowed_signers_line(key: SigningKey, principal: str) -> str:
    options = [f'namespaces="{NAMESPACE}"', f"valid-after={_timestamp(key.valid_from)}"]
    if key.valid_until is not None:
        options.append(f"valid-before={_timestamp(key.valid_until)}")
    return f"{principal} {','.join(options)} {key.public_key} {key.comment}".rstrip()


def allowed_signers_text(organisation: Organisation, at: datetime | None = None) -> str:
    """The organisation's unrevoked keys (or those valid ``at`` a moment) for
    ``ssh-keygen -Y verify -I <slug> -n reprogate-bundle``."""
    keys = (
        signing_key_list_for(organisation).filter(revoked_at__isnull=True)
        if at is None
        else signing_key_list_valid_at(organisation, at)
    )
    header = [
        f"# allowed_signers for {organisation.slug} ({organisation.name})",
        f"# ssh-keygen -Y verify -f allowed_signers -I {organisation.slug} "
        f"-n {NAMESPACE} -s manifest.json.sig < manifest.json",
    ]
    lines = [allowed_signers_line(k, organisation.slug) for k in keys.order_by("id")]
    return "\n".join(header + lines) + "\n"
