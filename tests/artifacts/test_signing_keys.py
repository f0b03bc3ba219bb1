from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from accounts.exceptions import ApplicationError, StateConflict
from accounts.models import AuditEvent, Organisation, Role
from artifacts.lib.signatures.sshkeys import load_private_key
from artifacts.models import SigningKey
from artifacts.permissions import can_manage_keys
from artifacts.selectors.bundles import (
    signing_key_list_valid_at,
    signing_key_status_at,
)
from artifacts.services.keys import (
    allowed_signers_text,
    signing_key_register,
    signing_key_revoke,
)
from tests.accounts.factories import MembershipFactory, UserFactory
from tests.artifacts.keys import (
    KINDS,
    private_key,
    public_line,
    ssh_keygen_key,
    ssh_keygen_sign,
    ssh_keygen_verify,
)

pytestmark = pytest.mark.django_db


def _register(org: Organisation, actor: Any, line: str = "", **kw: Any) -> SigningKey:
    line = line or public_line("ed25519")
    return signing_key_register(
        organisation=org, public_key_line=line, actor=actor, **kw
    )


def _refusal(org: Organisation, actor: Any, line: str, **kw: Any) -> ApplicationError:
    with pytest.raises(ApplicationError) as caught:
        _register(org, actor, line, **kw)
    return caught.value


# --- register -----------------------------------------------------------------------


def test_register_stores_the_parsed_key(
    vendor_a: Any, vendor_a_org: Organisation, clock: Any
) -> None:
    key = _register(vendor_a_org, vendor_a, public_line("ecdsa-384"))

    expected = private_key("ecdsa-384").public
    assert key.key_type == "ecdsa-sha2-nistp384"
    assert key.fingerprint == expected.fingerprint
    assert key.public_key == expected.openssh
    assert key.comment == "ecdsa-384-0@test"
    assert (key.valid_from, key.valid_until) == (clock.now(), None)
    assert key.registered_by == vendor_a


def test_register_is_audited_in_the_vendor_trail(
    vendor_a: Any, vendor_a_org: Organisation
) -> None:
    key = _register(vendor_a_org, vendor_a)

    event = AuditEvent.objects.get(action="signing_key.registered")
    assert event.organisation == vendor_a_org
    assert event.target_id == str(key.pk)
    assert event.data["fingerprint"] == key.fingerprint


def test_register_is_for_vendor_and_buyer_organisations_only(
    labops: Any, buyer_org: Organisation
) -> None:
    lab = buyer_org.engages.get(kind=Organisation.Kind.LAB)
    error = _refusal(lab, labops, public_line("ed25519"))

    assert error.code == "not_signer"
    assert not SigningKey.objects.exists()


@pytest.mark.parametrize(
    ("line", "code"),
    [
        ("ssh-dss AAAA", "key_type_unsupported"),
        ("ssh-ed25519 ###", "key_malformed"),
        ("", "key_malformed"),
    ],
)
def test_bad_key_is_refused_with_a_problem_on_public_key(
    vendor_a: Any, vendor_a_org: Organisation, line: str, code: str
) -> None:
    error = _refusal(vendor_a_org, vendor_a, line or " ")

    assert error.code == code
    assert [(p.code, p.path) for p in error.problems] == [(code, "public_key")]
    assert not AuditEvent.objects.filter(action="signing_key.registered").exists()


def test_duplicate_fingerprint_in_the_organisation_is_refused(
    vendor_a: Any, vendor_a_org: Organisation
) -> None:
    _register(vendor_a_org, vendor_a, public_line("rsa-3072"))
    again = private_key("rsa-3072").public.openssh + " another comment"

    error = _refusal(vendor_a_org, vendor_a, again)

    assert error.code == "key_duplicate"
    assert SigningKey.objects.count() == 1


def test_revoked_key_cannot_be_registered_again(
    vendor_a: Any, vendor_a_org: Organisation
) -> None:
    signing_key_revoke(key=_register(vendor_a_org, vendor_a), actor=vendor_a)

    assert _refusal(vendor_a_org, vendor_a, public_line("ed25519")).code == (
        "key_duplicate"
    )


def test_window_must_end_after_it_starts(
    vendor_a: Any, vendor_a_org: Organisation, clock: Any
) -> None:
    error = _refusal(
        vendor_a_org, vendor_a, public_line("ed25519"), valid_until=clock.now()
    )

    assert error.code == "key_window_invalid"
    assert error.problems[0].path == "valid_until"


# --- revoke -------------------------------------------------------------------------


def test_revoke_records_when_and_who_and_audits(
    vendor_a: Any, vendor_a_org: Organisation, clock: Any
) -> None:
    key = _register(vendor_a_org, vendor_a)
    moment = clock.advance(days=2)

    key = signing_key_revoke(key=key, actor=vendor_a)

    assert (key.revoked_at, key.revoked_by) == (moment, vendor_a)
    event = AuditEvent.objects.get(action="signing_key.revoked")
    assert (event.organisation, event.actor) == (vendor_a_org, vendor_a)


def test_revoking_twice_is_a_conflict(
    vendor_a: Any, vendor_a_org: Organisation
) -> None:
    key = _register(vendor_a_org, vendor_a)
    signing_key_revoke(key=key, actor=vendor_a)

    with pytest.raises(StateConflict) as caught:
        signing_key_revoke(key=key, actor=vendor_a)

    assert caught.value.code == "key_already_revoked"
    assert AuditEvent.objects.filter(action="signing_key.revoked").count() == 1


# --- validity at a moment -----------------------------------------------------------


def test_keys_valid_at_a_moment(
    vendor_a: Any, vendor_a_org: Organisation, clock: Any
) -> None:
    start = clock.now()
    expiring = _register(vendor_a_org, vendor_a, valid_until=start + timedelta(days=1))
    revoked = _register(vendor_a_org, vendor_a, public_line("ed25519", 1))
    later = _register(
        vendor_a_org,
        vendor_a,
        public_line("ecdsa-256"),
        valid_from=start + timedelta(days=3),
    )
    clock.advance(days=2)
    signing_key_revoke(key=revoked, actor=vendor_a)

    def valid(days: float) -> set[int]:
        at = start + timedelta(days=days)
        return set(
            signing_key_list_valid_at(vendor_a_org, at).values_list("pk", flat=True)
        )

    assert valid(0) == {expiring.pk, revoked.pk}
    assert valid(1.5) == {revoked.pk}
    assert valid(2.5) == set()
    assert valid(3) == {later.pk}


def test_status_at_names_why_a_key_is_not_valid(
    vendor_a: Any, vendor_a_org: Organisation, clock: Any
) -> None:
    start = clock.now()
    key = _register(vendor_a_org, vendor_a, valid_until=start + timedelta(days=5))
    clock.advance(days=1)
    key = signing_key_revoke(key=key, actor=vendor_a)

    statuses = [
        signing_key_status_at(key, start + timedelta(days=d)) for d in (-1, 0, 1, 6)
    ]

    assert statuses == ["not_yet_valid", "valid", "revoked", "revoked"]


# --- permissions --------------------------------------------------------------------


def test_can_manage_keys_of_own_organisation_only(
    vendor_a: Any, vendor_a_org: Any, vendor_b_org: Any, buyer: Any, buyer_org: Any
) -> None:
    admin = UserFactory.create(username="acme-admin")
    MembershipFactory.create(user=admin, organisation=vendor_a_org, role=Role.ADMIN)
    buyer_admin = UserFactory.create(username="northwind-admin")
    MembershipFactory.create(user=buyer_admin, organisation=buyer_org, role=Role.ADMIN)

    assert can_manage_keys(vendor_a, vendor_a_org)
    assert can_manage_keys(admin, vendor_a_org)
    assert not can_manage_keys(vendor_a, vendor_b_org)
    assert not can_manage_keys(buyer, vendor_a_org)
    assert can_manage_keys(buyer_admin, buyer_org)  # its baseline bundles' keys


# --- allowed_signers ----------------------------------------------------------------


def test_allowed_signers_lists_unrevoked_keys_with_their_window(
    vendor_a: Any, vendor_a_org: Organisation, clock: Any
) -> None:
    clock.travel_to(
        clock.now().replace(year=2026, month=11, day=29, hour=12, minute=0, second=5)
    )
    kept = _register(
        vendor_a_org, vendor_a, valid_until=clock.now() + timedelta(days=1)
    )
    gone = _register(vendor_a_org, vendor_a, public_line("ecdsa-256"))
    signing_key_revoke(key=gone, actor=vendor_a)

    lines = [
        ln for ln in allowed_signers_text(vendor_a_org).splitlines() if ln[0] != "#"
    ]

    assert lines == [
        'acme-flash namespaces="reprogate-bundle",valid-after="20261129120005Z",'
        f'valid-before="20261130120005Z" {kept.public_key} ed25519-0@test'
    ]


def test_allowed_signers_at_a_moment_keeps_keys_revoked_later(
    vendor_a: Any, vendor_a_org: Organisation, clock: Any
) -> None:
    start = clock.now()
    key = _register(vendor_a_org, vendor_a)
    clock.advance(hours=1)
    signing_key_revoke(key=key, actor=vendor_a)

    then = allowed_signers_text(vendor_a_org, at=start + timedelta(minutes=1))
    now = allowed_signers_text(vendor_a_org)

    assert key.public_key in then
    assert key.public_key not in now


@pytest.mark.parametrize("kind", KINDS)
def test_ssh_keygen_verifies_with_the_exported_allowed_signers(
    kind: str, vendor_a: Any, vendor_a_org: Organisation, tmp_path: Path
) -> None:
    key_path = ssh_keygen_key(tmp_path, kind)
    _register(vendor_a_org, vendor_a, Path(f"{key_path}.pub").read_text())
    manifest = tmp_path / "manifest.json"
    manifest.write_bytes(b'{"vendor": "acme-flash"}\n')
    ssh_keygen_sign(key_path, manifest)
    allowed = tmp_path / "allowed_signers"
    allowed.write_text(allowed_signers_text(vendor_a_org))

    result = ssh_keygen_verify(
        allowed, "acme-flash", Path(f"{manifest}.sig"), manifest.read_bytes()
    )

    assert result.returncode == 0, result.stderr
    assert b'Good "reprogate-bundle" signature for acme-flash' in result.stdout


def test_ssh_keygen_refuses_a_key_whose_window_ended(
    vendor_a: Any, vendor_a_org: Organisation, clock: Any, tmp_path: Path
) -> None:
    key_path = ssh_keygen_key(tmp_path, "ed25519")
    clock.travel_to(clock.now() - timedelta(days=10))
    _register(
        vendor_a_org,
        vendor_a,
        Path(f"{key_path}.pub").read_text(),
        valid_until=clock.now() + timedelta(days=1),
    )
    manifest = tmp_path / "manifest.json"
    manifest.write_bytes(b"{}\n")
    ssh_keygen_sign(key_path, manifest)
    allowed = tmp_path / "allowed_signers"
    allowed.write_text(allowed_signers_text(vendor_a_org))

    result = ssh_keygen_verify(allowed, "acme-flash", Path(f"{manifest}.sig"), b"{}\n")

    assert result.returncode != 0
    assert b"expired" in result.stderr


def test_ssh_keygen_refuses_another_principal(
    vendor_a: Any, vendor_a_org: Organisation, tmp_path: Path
) -> None:
    key = load_private_key(ssh_keygen_key(tmp_path, "ed25519").read_bytes())
    _register(vendor_a_org, vendor_a, key.public.openssh)
    manifest = tmp_path / "manifest.json"
    manifest.write_bytes(b"{}\n")
    ssh_keygen_sign(tmp_path / "id_ed25519", manifest)
    allowed = tmp_path / "allowed_signers"
    allowed.write_text(allowed_signers_text(vendor_a_org))

    result = ssh_keygen_verify(
        allowed, "bolt-storage", Path(f"{manifest}.sig"), b"{}\n"
    )

    assert result.returncode != 0
