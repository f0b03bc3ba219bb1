"""The Celery application: pool queue names and the filesystem broker folders."""

from __future__ import annotations

from pathlib import Path

import pytest
from celery import Celery

from config.celery import _make_broker_folders, pool_queue


def test_pool_queue_prefixes_the_pool_name() -> None:
    assert pool_queue("lab-1") == "pool.lab-1"


def test_pool_queue_accepts_63_characters() -> None:
    assert pool_queue("a" * 63) == f"pool.{'a' * 63}"


@pytest.mark.parametrize(
    "name",
    ["", "Lab", "-lab", "lab_1", "lab.1", "pool.lab", "lab 1", "a" * 64, "lab\n"],
)
def test_pool_queue_rejects_a_bad_name(name: str) -> None:
    with pytest.raises(ValueError, match="lowercase letters, digits and dashes"):
        pool_queue(name)


def test_make_broker_folders_creates_the_filesystem_folders(tmp_path: Path) -> None:
    app = Celery("folders-probe", set_as_current=False)
    folders = {
        key: str(tmp_path / key)
        for key in ("data_folder_in", "control_folder", "processed_folder")
    }
    app.conf.update(broker_url="filesystem://", broker_transport_options=folders)

    _make_broker_folders(app)

    assert all(Path(folder).is_dir() for folder in folders.values())


def test_make_broker_folders_ignores_other_brokers(tmp_path: Path) -> None:
    app = Celery("folders-probe", set_as_current=False)
    folder = tmp_path / "queue"
    app.conf.update(
        broker_url="redis://127.0.0.1:6379/0",
        broker_transport_options={"data_folder_in": str(folder)},
    )

    _make_broker_folders(app)

    assert not folder.exists()
