"""The page benchmark at two small scales (2 and 4 vendors, every family in
proportion): every page and API list it measures costs the same number of SQL
queries at both. It runs on the test run's own database (SQLite or PostgreSQL) and
times nothing (figures: tests/perf/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.perf import bench_pages
from tests.perf.large_install import Scale, build_base, counts, grow


@pytest.mark.django_db
@pytest.mark.timeout(900)  # every route twice: about 1.5 min of CPU
def test_no_page_or_api_list_costs_more_queries_with_more_data(
    tmp_path: Path,
) -> None:
    base = build_base(tmp_path)
    grow(base, Scale.small(2))
    clients = bench_pages.clients_for(base.users)
    selected = bench_pages.select(base.world.ids, clients)
    small = bench_pages.measure_all(selected.targets, clients, repeat=0)
    before = counts()
    grow(base, Scale.small(4))
    large = bench_pages.measure_all(selected.targets, clients, repeat=0)

    assert counts()["bids"] > before["bids"]
    assert counts()["runs"] > before["runs"]
    assert not selected.errors
    assert len(selected.targets) > 100  # every GET page and API list
    lines = bench_pages.table(selected.targets, small, large)
    assert len(lines) == len(selected.targets) + 2
    assert all(f.status == 200 for f in large.values())
    assert bench_pages.growing(selected.targets, small, large) == []
    bench_pages.profile_all(selected.targets[:2], clients, tmp_path / "profiles")
    assert sorted(p.name for p in (tmp_path / "profiles").iterdir()) == sorted(
        f"{t.key.replace(':', '-')}.prof" for t in selected.targets[:2]
    )


def test_flags_name_what_grew_and_what_is_unpaged() -> None:
    target = bench_pages.Target("rfp-list", "/api/v1/rfps/", "buyer", is_api=True)
    small = bench_pages.Figure(200, 9, 20.0, 900, 3, download=False, streamed=False)
    large = bench_pages.Figure(
        200, 12, 150.0, 600_000, 900, download=False, streamed=False, bare_list=True
    )

    found = bench_pages.flags(target, small, large)

    assert found == ["queries+", ">100ms", ">500kB", "unpaged"]
    assert bench_pages.flags(target, small, small) == []
