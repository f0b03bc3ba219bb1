"""One set of login limits for the web login and the API token endpoint: per
(account, client address), a high ceiling per address and a slowdown per account,
counted in the database, the address taken from a trusted proxy only. A lock
falls on the guesser: never on the account's owner elsewhere, never on the other
accounts at the guesser's address."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client, RequestFactory
from django.utils import timezone
from rest_framework.parsers import JSONParser
from rest_framework.request import Request
from rest_framework.test import APIClient, APIRequestFactory

from accounts import conf
from accounts.models import LoginFailure
from accounts.services import throttle
from tests.accounts.factories import PASSWORD
from tests.config.test_settings_startup import base_env, manage

__all__ = ["base_env"]  # the fixture, used below

pytestmark = pytest.mark.django_db

TOKEN = "/api/v1/auth/token/"
LOGIN = "/accounts/login/"


WRONG = "wrong"
PER_PAIR = 10  # the defaults, as docs/operations.md states them
PER_ADDRESS = 100
WINDOW = 300


def _guess(api: APIClient, username: str, password: str = WRONG, **meta: Any) -> Any:
    body = {"username": username, "password": password}
    return api.post(TOKEN, body, format="json", **meta)


def test_the_default_limits() -> None:
    limits = conf.login_limits()

    assert limits.window_seconds == WINDOW
    assert limits.per_account_address == PER_PAIR
    assert limits.per_address == PER_ADDRESS
    assert limits.per_account == 100


def test_an_attack_on_one_account_leaves_the_others_at_that_address_alone(
    vendor_a: Any, buyer: Any
) -> None:
    api = APIClient()
    statuses = [_guess(api, "vendor-a").status_code for _ in range(25)]

    colleague = _guess(api, "buyer", PASSWORD)

    assert statuses[PER_PAIR:] == [429] * (25 - PER_PAIR)  # the guesser is locked
    assert colleague.status_code == 200, colleague.content


def test_a_guesser_elsewhere_cannot_lock_the_owner_out(
    client: Client, vendor_a: Any
) -> None:
    api = APIClient()
    for _ in range(PER_PAIR):
        _guess(api, "vendor-a", REMOTE_ADDR="192.0.2.66")

    api_login = _guess(api, "vendor-a", PASSWORD, REMOTE_ADDR="192.0.2.7")
    web_login = client.post(LOGIN, {"username": "vendor-a", "password": PASSWORD})

    assert (
        _guess(api, "vendor-a", PASSWORD, REMOTE_ADDR="192.0.2.66").status_code == 429
    )
    assert api_login.status_code == 200
    assert web_login.status_code == 302
    assert "_auth_user_id" in client.session


def test_colleagues_behind_one_nat_mistyping_stay_below_the_address_ceiling(
    client: Client, buyer: Any
) -> None:
    for i in range(30):  # thirty colleagues, each mistyping twice
        for _ in range(2):
            client.post(LOGIN, {"username": f"colleague-{i}", "password": WRONG})

    answer = client.post(LOGIN, {"username": "buyer", "password": PASSWORD})

    assert LoginFailure.objects.count() == 60
    assert answer.status_code == 302


def test_sixty_guesses_with_spoofed_forwarded_for_are_locked_out(
    vendor_a: Any,
) -> None:
    api = APIClient()

    statuses = [
        _guess(api, "vendor-a", HTTP_X_FORWARDED_FOR=f"198.51.100.{i}").status_code
        for i in range(60)
    ]

    limit = PER_PAIR
    assert statuses[:limit] == [400] * limit
    assert set(statuses[limit:]) == {429}
    assert LoginFailure.objects.count() == limit  # refused guesses are not counted


def test_locked_answer_is_the_api_error_shape_with_retry_after(vendor_a: Any) -> None:
    api = APIClient()
    for _ in range(PER_PAIR):
        _guess(api, "vendor-a")

    response = _guess(api, "vendor-a", password=PASSWORD)

    assert response.status_code == 429
    assert response["Content-Type"] == "application/json"
    assert response.json()["code"] == "login_locked"
    assert "Too many failed attempts" in response.json()["message"]
    assert 0 < int(response["Retry-After"]) <= WINDOW


def test_a_sprayer_reaches_the_address_ceiling(settings: Any, vendor_a: Any) -> None:
    settings.REPROGATE_LOGIN_FAILURES_PER_ADDRESS = 24
    api = APIClient()
    for i in range(24):  # three guesses on each of eight accounts
        assert _guess(api, f"nobody-{i // 3}").status_code == 400

    response = _guess(api, "vendor-a", password=PASSWORD)
    elsewhere = _guess(api, "vendor-a", PASSWORD, REMOTE_ADDR="192.0.2.7")

    assert response.status_code == 429
    assert response.json()["code"] == "login_locked"
    assert elsewhere.status_code == 200


def test_an_ipv6_sprayer_counts_as_its_64(settings: Any, vendor_a: Any) -> None:
    settings.REPROGATE_LOGIN_FAILURES_PER_ADDRESS = 12
    api = APIClient()
    for i in range(12):
        _guess(api, f"nobody-{i}", REMOTE_ADDR=f"2001:db8:0:1::{i + 1:x}")

    same_64 = _guess(api, "vendor-a", PASSWORD, REMOTE_ADDR="2001:db8:0:1::ffff")
    other_64 = _guess(api, "vendor-a", PASSWORD, REMOTE_ADDR="2001:db8:0:2::1")

    assert same_64.status_code == 429
    assert other_64.status_code == 200
    assert set(LoginFailure.objects.values_list("address", flat=True)) == {
        "2001:db8:0:1::/64"
    }


def test_stuffing_from_many_addresses_slows_each_but_locks_no_one_out(
    settings: Any, vendor_a: Any
) -> None:
    settings.REPROGATE_LOGIN_FAILURES_PER_ACCOUNT = 20
    api = APIClient()
    for bot in range(2):
        for _ in range(PER_PAIR):
            _guess(api, "vendor-a", REMOTE_ADDR=f"198.51.100.{bot}")

    later_bot = [
        _guess(api, "vendor-a", REMOTE_ADDR="198.51.100.9").status_code
        for _ in range(throttle.FAILURES_UNDER_ATTACK + 1)
    ]
    owner = _guess(api, "vendor-a", PASSWORD, REMOTE_ADDR="192.0.2.7")

    assert later_bot == [400] * throttle.FAILURES_UNDER_ATTACK + [429]
    assert owner.status_code == 200


def test_an_empty_login_form_is_no_attempt(client: Client, buyer: Any) -> None:
    for _ in range(PER_PAIR + 1):
        answer = client.post(LOGIN, {"username": "", "password": ""})
        assert answer.status_code == 200
    client.post(LOGIN, {"username": "buyer", "password": ""})
    client.post(LOGIN, {})

    assert not LoginFailure.objects.exists()
    assert (
        client.post(LOGIN, {"username": "buyer", "password": PASSWORD}).status_code
        == 302
    )


def test_web_login_and_api_share_the_count(client: Client, vendor_a: Any) -> None:
    half = PER_PAIR // 2
    for _ in range(half):
        client.post(LOGIN, {"username": "vendor-a", "password": "wrong"})
    api = APIClient()
    for _ in range(PER_PAIR - half):
        _guess(api, "vendor-a")

    api_answer = _guess(api, "vendor-a", password=PASSWORD)
    web_answer = client.post(LOGIN, {"username": "vendor-a", "password": PASSWORD})

    assert api_answer.status_code == 429
    assert web_answer.status_code == 429
    assert "Too many failed attempts" in web_answer.content.decode()
    assert "_auth_user_id" not in client.session


def test_the_count_lives_in_the_database_not_in_process_memory(
    vendor_a: Any,
) -> None:
    api = APIClient()
    for _ in range(PER_PAIR):
        _guess(api, "vendor-a")

    cache.clear()  # what another process sees: none of this process's memory

    assert _guess(api, "vendor-a", password=PASSWORD).status_code == 429
    assert LoginFailure.objects.filter(username="vendor-a").count() == 10


def test_a_login_elsewhere_does_not_reset_another_address(vendor_a: Any) -> None:
    api = APIClient()
    attacker = {"REMOTE_ADDR": "192.0.2.66"}
    for _ in range(PER_PAIR - 1):
        _guess(api, "vendor-a", **attacker)

    assert _guess(api, "vendor-a", PASSWORD, REMOTE_ADDR="192.0.2.7").status_code == 200
    assert _guess(api, "vendor-a", **attacker).status_code == 400

    assert _guess(api, "vendor-a", PASSWORD, **attacker).status_code == 429


def test_a_login_clears_the_own_address_typos(vendor_a: Any) -> None:
    api = APIClient()
    for _ in range(3):
        _guess(api, "vendor-a")

    assert _guess(api, "vendor-a", password=PASSWORD).status_code == 200

    assert not LoginFailure.objects.filter(username="vendor-a").exists()


def test_failures_older_than_the_window_no_longer_count(vendor_a: Any) -> None:
    api = APIClient()
    for _ in range(PER_PAIR):
        _guess(api, "vendor-a")
    past = timezone.now() - timedelta(seconds=WINDOW + 1)
    LoginFailure.objects.update(occurred_at=past)

    assert _guess(api, "vendor-a", password=PASSWORD).status_code == 200


def test_old_failures_are_pruned_so_the_table_stays_bounded(vendor_a: Any) -> None:
    past = timezone.now() - timedelta(seconds=WINDOW + 1)
    LoginFailure.objects.bulk_create(
        LoginFailure(username=f"u{i}", address="192.0.2.1", occurred_at=past)
        for i in range(50)
    )

    _guess(APIClient(), "vendor-a")

    assert list(LoginFailure.objects.values_list("username", flat=True)) == ["vendor-a"]


def test_usernames_are_counted_without_regard_to_case(vendor_a: Any) -> None:
    api = APIClient()
    for i in range(PER_PAIR):
        _guess(api, "VENDOR-A" if i % 2 else "vendor-a")

    assert _guess(api, "vendor-a", password=PASSWORD).status_code == 429


def test_forwarded_for_from_a_trusted_proxy_names_the_client(
    settings: Any, vendor_a: Any
) -> None:
    settings.REPROGATE_TRUSTED_PROXIES = ["10.0.0.0/8"]
    settings.REPROGATE_LOGIN_FAILURES_PER_ADDRESS = 12
    api = APIClient()
    via_proxy = {"REMOTE_ADDR": "10.1.2.3"}
    for i in range(12):
        _guess(api, f"nobody-{i}", HTTP_X_FORWARDED_FOR="203.0.113.5", **via_proxy)

    blocked = _guess(
        api, "vendor-a", PASSWORD, HTTP_X_FORWARDED_FOR="203.0.113.5", **via_proxy
    )
    other = _guess(
        api, "vendor-a", PASSWORD, HTTP_X_FORWARDED_FOR="203.0.113.6", **via_proxy
    )

    assert blocked.status_code == 429
    assert other.status_code == 200
    assert set(LoginFailure.objects.values_list("address", flat=True)) == {
        "203.0.113.5"
    }


@pytest.mark.parametrize(
    ("remote", "forwarded", "expected"),
    [
        ("192.0.2.1", "", "192.0.2.1"),
        ("192.0.2.1", "203.0.113.9", "192.0.2.1"),  # not a proxy: header ignored
        ("10.0.0.2", "203.0.113.9", "203.0.113.9"),
        ("10.0.0.2", "6.6.6.6, 203.0.113.9", "203.0.113.9"),  # client-set part
        ("10.0.0.2", "203.0.113.9, 10.0.0.7", "203.0.113.9"),  # two proxies
        ("10.0.0.2", "10.0.0.7", "10.0.0.7"),  # only proxies: the farthest
        ("10.0.0.2", "", "10.0.0.2"),
        ("10.0.0.2", "not-an-address", "10.0.0.2"),
        ("10.0.0.2", "junk, 203.0.113.9", "203.0.113.9"),
        ("10.0.0.2", "2001:db8::1", "2001:db8::1"),
    ],
)
def test_client_address(
    settings: Any, remote: str, forwarded: str, expected: str
) -> None:
    settings.REPROGATE_TRUSTED_PROXIES = ["10.0.0.0/8"]
    meta: dict[str, Any] = {"REMOTE_ADDR": remote}
    if forwarded:
        meta["HTTP_X_FORWARDED_FOR"] = forwarded

    request = RequestFactory().get("/", **meta)

    assert throttle.client_address(request) == expected


def _rate_key(username: Any, **meta: Any) -> str:
    body = {"username": username, "password": WRONG}
    request = APIRequestFactory().post(TOKEN, body, format="json", **meta)
    return throttle.LoginRateThrottle().get_ident(
        Request(request, parsers=[JSONParser()])
    )


def test_the_rate_throttle_is_keyed_on_the_address_and_the_account(
    settings: Any,
) -> None:
    settings.REPROGATE_TRUSTED_PROXIES = []
    spoofed = {"REMOTE_ADDR": "192.0.2.1", "HTTP_X_FORWARDED_FOR": "198.51.100.1"}

    key = _rate_key("vendor-a", **spoofed)

    assert key.startswith("192.0.2.1/")
    assert key == _rate_key(" Vendor-A", REMOTE_ADDR="192.0.2.1")
    assert key != _rate_key("buyer", REMOTE_ADDR="192.0.2.1")
    assert key != _rate_key("vendor-a", REMOTE_ADDR="192.0.2.2")
    assert _rate_key(["not", "a", "name"], REMOTE_ADDR="192.0.2.1").startswith(
        "192.0.2.1/"
    )


def test_web_login_counts_the_client_address_not_the_header(
    client: Client, buyer: Any
) -> None:
    for i in range(PER_PAIR):
        client.post(
            LOGIN,
            {"username": "buyer", "password": "wrong"},
            HTTP_X_FORWARDED_FOR=f"198.51.100.{i}",
        )

    assert set(LoginFailure.objects.values_list("address", flat=True)) == {"127.0.0.1"}
    answer = client.post(LOGIN, {"username": "buyer", "password": PASSWORD})
    assert answer.status_code == 429


def test_startup_rejects_a_trusted_proxy_that_is_no_address(
    base_env: dict[str, str],
) -> None:
    base_env["REPROGATE_TRUSTED_PROXIES"] = "10.0.0.1, proxy.internal"

    result = manage(base_env, "check")

    assert result.returncode != 0
    assert "REPROGATE_TRUSTED_PROXIES: 'proxy.internal'" in result.stderr
