"""``?format=`` names one of an operation's documented formats or is refused:
given empty it is an unknown format (404), as any other unknown one."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from artifacts.services.transparency import checkpoint_publish

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("query", "expected"),
    [("", 200), ("?format=json", 200), ("?format=", 404), ("?format=xml", 404)],
)
def test_the_format_parameter_names_a_documented_format(
    query: str, expected: int
) -> None:
    checkpoint_publish()
    response = APIClient().get("/api/v1/log/checkpoint" + query)
    assert response.status_code == expected
