"""What the host can enforce, and dropping the page cache."""

from __future__ import annotations

import json
import os
from pathlib import Path

from benchmarks.lib.sandbox import drop_page_cache, sandbox_capabilities
from benchmarks.lib.sandbox.capabilities import DROP_CACHES


def test_capabilities_are_json_and_consistent() -> None:
    caps = sandbox_capabilities(refresh=True)

    assert json.loads(json.dumps(caps)) == caps
    assert caps["method"] in {"bwrap", "unshare", "none"}
    assert caps["root"] is (os.geteuid() == 0)
    assert caps["network_isolation"] is (caps["bwrap_works"] or caps["unshare_works"])
    if caps["method"] == "bwrap":
        assert caps["filesystem_isolation"] is True
    if caps["uid_drop"]:
        assert caps["process_limit"] is True
    assert caps["device_binding"] is (caps["root"] and caps["bwrap_works"])
    assert caps["device_allow_list"] in {"cgroup-v1", "none"}
    if not caps["device_binding"]:
        assert caps["endpoints"] is False


def test_drop_page_cache_writes_3_where_permitted(tmp_path: Path) -> None:
    control = tmp_path / "drop_caches"
    control.write_text("0\n")

    assert drop_page_cache(control=control) is True
    assert control.read_text() == "3\n"


def test_drop_page_cache_says_false_where_not_permitted(tmp_path: Path) -> None:
    assert drop_page_cache(control=tmp_path / "missing" / "drop_caches") is False


def test_drop_page_cache_on_this_host_matches_the_capability() -> None:
    permitted = os.access(DROP_CACHES, os.W_OK)

    assert drop_page_cache() is permitted
    assert sandbox_capabilities()["drop_caches"] is permitted
