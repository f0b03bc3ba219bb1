"""Without a token or a session every gates operation answers 401 in the error
shape, before it looks anything up."""

from __future__ import annotations

import pytest

from tests.gates.api.support import api

pytestmark = pytest.mark.django_db

ID = "6b1f3a52-0d1e-4c27-9d7b-0a5f2c9e1d11"
CALLS = [
    ("get", f"/api/v1/rfps/{ID}/gate-board/"),
    ("get", f"/api/v1/evaluations/{ID}/"),
    ("post", f"/api/v1/evaluations/{ID}/more-runs/"),
    ("post", f"/api/v1/gate-plans/{ID}/gates/lab-validation/evaluate/"),
    ("get", f"/api/v1/rfps/{ID}/gate-plans/"),
    ("post", f"/api/v1/rfps/{ID}/gate-plans/"),
    ("get", f"/api/v1/gate-plans/{ID}/"),
    ("patch", f"/api/v1/gate-plans/{ID}/"),
    ("post", f"/api/v1/gate-plans/{ID}/freeze/"),
    ("post", f"/api/v1/gate-plans/{ID}/new-version/"),
    ("get", f"/api/v1/gate-plans/{ID}/export/"),
    ("post", f"/api/v1/gate-plans/{ID}/gates/lab-validation/decisions/"),
    ("post", f"/api/v1/decisions/{ID}/second/"),
    ("post", f"/api/v1/decisions/{ID}/withdraw/"),
    ("get", "/api/v1/retest-obligations/"),
    ("get", f"/api/v1/retest-obligations/{ID}/"),
    ("post", f"/api/v1/retest-obligations/{ID}/request/"),
]


@pytest.mark.parametrize(("method", "url"), CALLS)
def test_anonymous_callers_are_asked_to_sign_in(method: str, url: str) -> None:
    response = getattr(api(), method)(url, {}, format="json")

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    assert response.json()["code"] == "not_authenticated"
