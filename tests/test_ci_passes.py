"""CI's two passes (``REPROGATE_TESTS_CI_PASS``, tests/conftest.py): every test runs
in at least one, the tests that use no database in exactly one."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from tests.conftest import _in_ci_pass, pytest_collection_modifyitems


@dataclass(eq=False)
class FakeItem:
    """What the pass rule reads of a ``pytest.Item``: its fixtures and markers."""

    fixturenames: tuple[str, ...] = ()
    markers: tuple[str, ...] = ()

    def get_closest_marker(self, name: str) -> object | None:
        return name if name in self.markers else None


@dataclass
class FakeConfig:
    deselected: list[Any] = field(default_factory=list)

    @property
    def hook(self) -> SimpleNamespace:
        return SimpleNamespace(pytest_deselected=self._deselected)

    def _deselected(self, items: list[Any]) -> None:
        self.deselected.extend(items)


def _passes(item: FakeItem) -> list[str]:
    return [p for p in ("sqlite", "postgresql") if _in_ci_pass(item, p)]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("item", "passes"),
    [
        (FakeItem(fixturenames=("db",)), ["sqlite", "postgresql"]),
        (FakeItem(markers=("django_db",)), ["sqlite", "postgresql"]),
        (
            FakeItem(fixturenames=("live_server",), markers=("browser",)),
            ["sqlite", "postgresql"],
        ),
        (FakeItem(fixturenames=("db", "chromium")), ["sqlite"]),
        (FakeItem(fixturenames=("tmp_path",)), ["sqlite"]),
        (FakeItem(markers=("integration",)), ["postgresql"]),
        (
            FakeItem(fixturenames=("db",), markers=("integration",)),
            ["sqlite", "postgresql"],
        ),
    ],
    ids=[
        "database",
        "django_db mark",
        "browser (-m 'not browser' leaves it out on PostgreSQL)",
        "report rendered in Chromium",
        "no database",
        "no database, starts processes",
        "database, starts processes",
    ],
)
def test_each_test_runs_in_its_passes(item: FakeItem, passes: list[str]) -> None:
    assert _passes(item) == passes


def test_a_pass_keeps_its_share_and_reports_the_rest_deselected(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plain, spawning = FakeItem(), FakeItem(markers=("integration",))
    database = FakeItem(fixturenames=("db",))
    config = FakeConfig()
    items: list[Any] = [plain, spawning, database]
    monkeypatch.setenv("REPROGATE_TESTS_CI_PASS", "postgresql")

    pytest_collection_modifyitems(config, items)  # type: ignore[arg-type]

    assert items == [spawning, database]
    assert config.deselected == [plain]


def test_an_unknown_pass_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPROGATE_TESTS_CI_PASS", "mysql")

    with pytest.raises(pytest.UsageError, match="expected one of sqlite, postgresql"):
        pytest_collection_modifyitems(FakeConfig(), [])  # type: ignore[arg-type]
