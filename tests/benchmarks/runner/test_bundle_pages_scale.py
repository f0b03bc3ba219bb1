"""The pages of a bundle of many files at scale: the bundle page and its
deposit list their files and blobs a page at a time with the same number of
queries whatever their number; a long leaf downloads instead of showing; the
campaign form offers the newest bundles and still accepts any startable one."""

from __future__ import annotations

import hashlib
import uuid
from datetime import timedelta
from functools import partial
from typing import Any

import pytest
from django.urls import reverse

from artifacts.models import Bundle, Deposit
from benchmarks.models import Campaign, LabPool
from tests.benchmarks.runner.scale_support import (
    add_deposit_blobs,
    add_files,
    query_counts,
)

pytestmark = pytest.mark.django_db


def _deposit(bundle: Bundle) -> Deposit:
    return Deposit.objects.get(bundle=bundle, kind=Deposit.Kind.BUNDLE)


def test_bundle_page_queries_do_not_grow_with_its_files(
    bundle: Bundle, client_for: Any, vendor_a: Any
) -> None:
    url = reverse("artifacts:bundle_detail", args=[bundle.public_id])

    small, large = query_counts(client_for(vendor_a), url, partial(add_files, bundle))

    assert large == small


def test_bundle_page_shows_the_asked_page_of_files(
    bundle: Bundle, client_for: Any, vendor_a: Any, monkeypatch: Any
) -> None:
    monkeypatch.setattr("artifacts.views.bundles.PAGE_SIZE", 5)
    add_files(bundle, 40)  # after the bundle's own files: data/… sorts after them
    paths = list(bundle.files.order_by("path").values_list("path", flat=True))
    url = reverse("artifacts:bundle_detail", args=[bundle.public_id])

    html = client_for(vendor_a).get(url, {"page": 2}).content.decode()

    shown = [p for p in paths if f'title="{p}"' in html]
    assert shown == paths[5:10]
    assert f"Page 2 of {-(-len(paths) // 5)} · {len(paths)} in all" in html


def test_deposit_page_queries_do_not_grow_with_its_blobs(
    bundle: Bundle, client_for: Any, buyer: Any
) -> None:
    deposit = _deposit(bundle)
    url = reverse("artifacts:escrow_deposit", args=[deposit.public_id])
    grow = partial(add_deposit_blobs, deposit)

    small, large = query_counts(client_for(buyer), url, grow)

    assert large == small


def test_deposit_page_shows_the_asked_page_of_blobs(
    bundle: Bundle, client_for: Any, buyer: Any, monkeypatch: Any
) -> None:
    monkeypatch.setattr("artifacts.views.escrow.PAGE_SIZE", 5)
    monkeypatch.setattr("artifacts.views.escrow.LEAF_SHOWN_BYTES", 10)
    deposit = _deposit(bundle)
    add_deposit_blobs(deposit, 20)
    digests = [i.blob.sha256 for i in deposit.items.order_by("position")]
    url = reverse("artifacts:escrow_deposit", args=[deposit.public_id])

    html = client_for(buyer).get(url, {"page": 2}).content.decode()

    assert [d for d in digests if f'"hash">{d}<' in html] == digests[5:10]
    assert f"Page 2 of {-(-len(digests) // 5)} · {len(digests)} in all" in html


def test_deposit_page_links_a_long_leaf_instead_of_showing_it(
    bundle: Bundle, client_for: Any, buyer: Any, monkeypatch: Any
) -> None:
    deposit = _deposit(bundle)
    client = client_for(buyer)
    monkeypatch.setattr("artifacts.views.escrow.LEAF_SHOWN_BYTES", 10)

    html = client.get(
        reverse("artifacts:escrow_deposit", args=[deposit.public_id])
    ).content.decode()
    leaf_url = reverse("artifacts:escrow_deposit_leaf", args=[deposit.public_id])
    leaf = client.get(leaf_url)

    assert 'data-testid="leaf-too-large"' in html
    assert 'data-testid="leaf-b64"' not in html
    assert leaf.content == bytes(deposit.leaf)
    assert hashlib.sha256(b"\x00" + leaf.content).hexdigest() == deposit.leaf_hash
    assert leaf["Content-Type"] == "application/json"


def _newer_copies(bundle: Bundle, count: int) -> list[Bundle]:
    """``count`` accepted bundles like ``bundle``, each newer than the last."""
    copies = []
    for i in range(count):
        copy = Bundle.objects.get(pk=bundle.pk)
        copy.pk, copy.public_id, copy.sha256 = None, uuid.uuid4(), f"{i + 1:064x}"
        copy.created_at = bundle.created_at + timedelta(minutes=i + 1)
        copy.save()
        copies.append(copy)
    return copies


def _offered(html: str, bundles: list[Bundle]) -> list[Bundle]:
    """The bundles the form's bundle select offers (not the pool select's)."""
    select = html.split('name="bundle"', 1)[1].split("</select>", 1)[0]
    return [b for b in bundles if f'<option value="{b.pk}"' in select]


def test_campaign_form_offers_the_newest_bundles_and_accepts_any(
    bundle: Bundle, pool: LabPool, client_for: Any, labops: Any, monkeypatch: Any
) -> None:
    monkeypatch.setattr("benchmarks.forms.lab.PAGE_SIZE", 3)
    copies = _newer_copies(bundle, 4)
    client, url = client_for(labops), reverse("benchmarks:campaign_start")

    html = client.get(url).content.decode()
    response = client.post(
        url, {"bundle": bundle.pk, "pool": pool.pk, "repetitions": 1, "gate": ""}
    )

    assert _offered(html, [bundle, *copies]) == copies[1:]  # the 3 newest
    assert 'data-testid="bundle-search"' in html
    assert response.status_code == 302
    assert Campaign.objects.get().bundle == bundle


def test_campaign_form_finds_an_older_bundle_by_its_digest(
    bundle: Bundle, pool: LabPool, client_for: Any, labops: Any, monkeypatch: Any
) -> None:
    monkeypatch.setattr("benchmarks.forms.lab.PAGE_SIZE", 3)
    copies = _newer_copies(bundle, 4)
    url = reverse("benchmarks:campaign_start")

    html = client_for(labops).get(url, {"q": bundle.sha256[:12]}).content.decode()

    assert _offered(html, [bundle, *copies]) == [bundle]


@pytest.mark.parametrize(
    "search",
    [
        "%",
        "_",
        "%%",
        "a" * 5_000,
        "RFP\x00",
        "<script>alert(1)</script>",
        "' OR 1=1 --",
    ],
)
def test_campaign_form_search_takes_hostile_text_as_text(
    bundle: Bundle, client_for: Any, labops: Any, monkeypatch: Any, search: str
) -> None:
    """Wildcards match themselves, a search too long for any name or holding NUL
    matches nothing (PostgreSQL refuses NUL in a query), and the echo is escaped."""
    monkeypatch.setattr("benchmarks.forms.lab.PAGE_SIZE", 3)
    copies = _newer_copies(bundle, 2)
    url = reverse("benchmarks:campaign_start")

    response = client_for(labops).get(url, {"q": search})
    html = response.content.decode()

    assert response.status_code == 200
    assert _offered(html, [bundle, *copies]) == []
    assert "<script>alert(1)</script>" not in html


def test_campaign_form_search_still_finds_a_vendor_by_name(
    bundle: Bundle, client_for: Any, labops: Any
) -> None:
    url = reverse("benchmarks:campaign_start")
    name = bundle.organisation.name

    html = client_for(labops).get(url, {"q": f"  {name[1:-1].upper()} "}).content
    assert _offered(html.decode(), [bundle]) == [bundle]
