"""The checks every paged API list passes: a first and a second page of one row
each, different rows; a ``limit`` past the cap asks for ``MAX_PAGE_SIZE`` rows.
``rows`` names the list's key: ``results`` for a list, the row key of a document
that pages its rows beside its other fields (a gate board's ``vendors``)."""

from __future__ import annotations

from typing import Any

from rest_framework.test import APIClient

from accounts.lib.paging import MAX_PAGE_SIZE


def assert_pages(client: APIClient, url: str, rows: str = "results") -> dict[str, Any]:
    """``url`` lists at least two rows for ``client``: its pages check out. The
    whole list (one page at the cap) is returned."""
    first = client.get(url, {"limit": 1})
    assert first.status_code == 200, first.content
    second = client.get(url, {"limit": 1, "offset": 1}).json()
    beyond = client.get(url, {"limit": 10_000, "offset": 1}).json()
    whole = client.get(url, {"limit": 10_000}).json()
    one = first.json()

    assert one["count"] >= 2
    assert (len(one[rows]), len(second[rows])) == (1, 1)
    assert one[rows] != second[rows]
    assert one[rows] + second[rows] == whole[rows][:2]
    assert "offset=1" in one["next"]
    assert one["previous"] is None
    assert f"limit={MAX_PAGE_SIZE}" in beyond["previous"]  # 10,000 was cut
    assert len(beyond[rows]) == one["count"] - 1
    assert len(whole[rows]) == whole["count"] == one["count"]
    return whole
