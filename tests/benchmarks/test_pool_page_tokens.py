"""The pools page's host tokens: the pool's lab operators join a host (the
agent's command is in that one answer only) and revoke tokens; another lab's
operator, a buyer and anonymous visitors neither see nor change them."""

from __future__ import annotations

# ruff: noqa: F811 - the fixtures come from tests.benchmarks.host_support
import re
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from accounts.models import AuditEvent
from benchmarks.models import HostToken, LabPool
from benchmarks.services.host_tokens import host_token_authenticate, host_token_issue
from tests.benchmarks.host_support import (  # noqa: F401 (fixtures)
    lab_org,
    other_lab,
    other_labops,
    other_pool,
    pool,
    register_with,
)

pytestmark = pytest.mark.django_db
POOLS = reverse("benchmarks:pool_list")
TOKEN = re.compile(r"rgh_[A-Za-z0-9_-]{30,}")


def _join_url(pool: LabPool) -> str:
    return reverse("benchmarks:pool_host_join", args=[pool.public_id])


def _revoke_url(pool: LabPool, token: HostToken) -> str:
    return reverse(
        "benchmarks:pool_token_revoke", args=[pool.public_id, token.public_id]
    )


@pytest.fixture
def operator(client_for: Any, labops: Any) -> Client:
    client: Client = client_for(labops)
    return client


def test_pool_page_tells_how_to_join_a_first_host(
    operator: Client, pool: LabPool
) -> None:
    page = operator.get(POOLS).content.decode()

    assert 'data-testid="pool-hosts-empty"' in page
    assert 'data-testid="tokens-empty"' in page
    assert f'action="{_join_url(pool)}"' in page


def test_pool_page_waits_for_a_joined_host_until_its_token_is_revoked(
    operator: Client, pool: LabPool
) -> None:
    token = host_token_issue(pool=pool, name="lab-07", actor=None).token
    waiting = operator.get(POOLS).content.decode()

    operator.post(_revoke_url(pool, token))

    again = operator.get(POOLS).content.decode()
    assert 'data-testid="pool-hosts-waiting"' in waiting
    assert 'data-testid="pool-hosts-empty"' not in waiting
    assert 'data-testid="pool-hosts-empty"' in again


def test_join_shows_the_command_once(
    operator: Client, pool: LabPool, labops: Any, settings: Any
) -> None:
    settings.REPROGATE_PUBLIC_URL = "https://reprogate.example.com"

    answer = operator.post(_join_url(pool), {"name": "lab-07"})

    assert answer.status_code == 200
    assert answer["Cache-Control"] == "no-store"
    page = answer.content.decode()
    [raw] = set(TOKEN.findall(page))
    assert "REPROGATE_SERVER_URL=https://reprogate.example.com " in page
    assert f"REPROGATE_HOST_TOKEN={raw} python -m reprogate_agent" in page
    token = host_token_authenticate(raw)
    assert (token.pool, token.name, token.created_by) == (pool, "lab-07", labops)
    again = operator.get(POOLS).content.decode()
    assert TOKEN.findall(again) == []
    assert token.prefix in again


def test_join_again_under_the_same_name_is_refused_without_the_token(
    operator: Client, pool: LabPool
) -> None:
    first = operator.post(_join_url(pool), {"name": "lab-07"}).content.decode()

    resent = operator.post(_join_url(pool), {"name": "lab-07"})

    assert resent.status_code == 409
    page = resent.content.decode()
    assert "holds a token on gpu-a already" in page
    assert TOKEN.findall(page) == []
    assert set(TOKEN.findall(first))
    assert HostToken.objects.count() == 1


@pytest.mark.parametrize("name", ["", "   ", "x" * 101])
def test_join_refuses_an_unfit_name(operator: Client, pool: LabPool, name: str) -> None:
    answer = operator.post(_join_url(pool), {"name": name})

    assert answer.status_code == 400
    assert 'data-testid="join-error"' in answer.content.decode()
    assert not HostToken.objects.exists()


def test_a_host_name_is_shown_escaped(operator: Client, pool: LabPool) -> None:
    operator.post(_join_url(pool), {"name": "<img src=x onerror=alert(1)>"})

    page = operator.get(POOLS).content.decode()

    assert "<img src=x" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page


def test_pool_page_lists_tokens_and_the_hosts_they_registered(
    operator: Client, pool: LabPool, labops: Any
) -> None:
    live = host_token_issue(pool=pool, name="lab-07", actor=labops).token
    gone = host_token_issue(pool=pool, name="lab-08", actor=None).token
    register_with(live)
    operator.post(_revoke_url(pool, gone))

    page = operator.get(POOLS).content.decode()

    rows = re.findall(r'<tr data-testid="token-row".*?</tr>', page, re.S)
    assert [r.split('data-token="')[1].split('"')[0] for r in rows] == [
        "lab-07",
        "lab-08",
    ]
    assert "active" in rows[0]
    assert "by labops" in rows[0]
    assert "Revoke" in rows[0]
    assert "revoked" in rows[1]
    assert "Revoke" not in rows[1]
    assert f'lab-07 <code class="small">{live.prefix}…</code>' in page


def test_revoke_ends_the_token_and_says_so(
    operator: Client, pool: LabPool, labops: Any
) -> None:
    issued = host_token_issue(pool=pool, name="lab-07", actor=labops)

    answer = operator.post(_revoke_url(pool, issued.token), follow=True)

    assert answer.redirect_chain == [(POOLS, 302)]
    assert f"Token {issued.token.prefix}… of lab-07 revoked" in answer.content.decode()
    assert HostToken.objects.get().revoked_by == labops
    event = AuditEvent.objects.get(action="host_token.revoked")
    assert event.actor == labops


def test_revoke_twice_says_it_was_revoked_already(
    operator: Client, pool: LabPool
) -> None:
    token = host_token_issue(pool=pool, name="lab-07", actor=None).token
    operator.post(_revoke_url(pool, token))

    answer = operator.post(_revoke_url(pool, token), follow=True)

    assert "was revoked already" in answer.content.decode()
    assert AuditEvent.objects.filter(action="host_token.revoked").count() == 1


def test_join_and_revoke_take_only_posts(operator: Client, pool: LabPool) -> None:
    token = host_token_issue(pool=pool, name="lab-07", actor=None).token

    assert operator.get(_join_url(pool)).status_code == 405
    assert operator.get(_revoke_url(pool, token)).status_code == 405
    assert HostToken.objects.get().revoked_at is None


def test_another_labs_operator_neither_sees_nor_changes_tokens(
    client_for: Any, other_labops: Any, pool: LabPool, other_pool: LabPool
) -> None:
    token = host_token_issue(pool=pool, name="lab-07", actor=None).token
    client = client_for(other_labops)

    page = client.get(POOLS).content.decode()
    joined = client.post(_join_url(pool), {"name": "intruder"})
    revoked = client.post(_revoke_url(pool, token))
    # this lab's pool in the URL with the other lab's token: still not found
    crossed = client.post(_revoke_url(other_pool, token))

    assert token.prefix not in page
    assert "gpu-a" not in page
    assert (joined.status_code, revoked.status_code, crossed.status_code) == (
        404,
        404,
        404,
    )
    assert list(HostToken.objects.values_list("name", "revoked_at")) == [
        ("lab-07", None)
    ]


@pytest.mark.parametrize("persona", ["buyer", "vendor_a", "outsider"])
def test_people_outside_the_lab_get_404(
    client_for: Any, pool: LabPool, persona: str, request: pytest.FixtureRequest
) -> None:
    token = host_token_issue(pool=pool, name="lab-07", actor=None).token
    client = client_for(request.getfixturevalue(persona))

    listing = client.get(POOLS)
    joined = client.post(_join_url(pool), {"name": "intruder"})
    revoked = client.post(_revoke_url(pool, token))

    assert listing.status_code == 403
    assert token.prefix not in listing.content.decode()
    assert (joined.status_code, revoked.status_code) == (404, 404)
    assert HostToken.objects.get().revoked_at is None


def test_anonymous_visitors_are_sent_to_log_in(pool: LabPool) -> None:
    token = host_token_issue(pool=pool, name="lab-07", actor=None).token
    client = Client()

    for url in (POOLS, _join_url(pool), _revoke_url(pool, token)):
        answer = client.post(url, {"name": "intruder"})
        assert answer.status_code == 302
        assert answer["Location"].startswith(reverse("accounts:login"))
    assert list(HostToken.objects.values_list("name", "revoked_at")) == [
        ("lab-07", None)
    ]


def _queries_of(client: Client) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(POOLS).status_code == 200
    return len(queries)


def test_the_pool_page_reads_tokens_in_a_fixed_number_of_queries(
    operator: Client, pool: LabPool
) -> None:
    register_with(host_token_issue(pool=pool, name="h0", actor=None).token, "w0@h")
    one = _queries_of(operator)
    for n in range(1, 6):
        token = host_token_issue(pool=pool, name=f"h{n}", actor=None).token
        register_with(token, f"w{n}@h")

    assert _queries_of(operator) == one
