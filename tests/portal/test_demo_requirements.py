"""The demo RFPs demand the chat-70b story through their requirements document."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from portal.demo import DEMO_RFP, LAB_RFP, demo_seed
from procurement.models import Rfp
from procurement.selectors.requirements import requirements_document

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


def test_both_demo_rfps_demand_the_chat_70b_workload(
    settings: Any, tmp_path: Path
) -> None:
    settings.VAR_DIR = tmp_path

    demo_seed()

    for reference in (DEMO_RFP, LAB_RFP):
        doc = requirements_document(Rfp.objects.get(reference=reference))
        (workload,) = doc["workloads"]
        assert workload["id"] == "chat-70b"
        assert workload["scenario_kinds"] == [
            "steady",
            "interference",
            "failover",
            "warmup",
        ]
        assert doc["accelerators"][0]["vendors"] == ["nvidia"]
        assert doc["fabric"]["transports"] == ["tcp", "rdma"]
        assert doc["environment"]["pinned"] == ["kernel", "gpu_driver", "nvme_firmware"]
        assert doc["metrics"]  # the default metric rows, kept
