"""A run's trace spans through the runner-artefact route and
``GET /api/v1/runs/<id>/spans.jsonl``: a file that is not all spans is refused;
kept ones are served, sorted, to whoever may see the run and to no one else, and
go into the campaign's evidence package, checked offline."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from benchmarks.lib.lab.spans import encode_spans, read_spans, span_from_json
from benchmarks.models import Campaign, Run
from tests.benchmarks.lab.test_spans import request_tree
from tests.benchmarks.runner.support import runs_of
from tests.benchmarks.runner_api.support import finish, put_output
from tests.benchmarks.runner_api.test_artefacts import (
    METRICS,
    api,
    live,  # noqa: F401 (fixture)
    put_artefact,
)
from tests.benchmarks.runner_api.test_signed_results import _run_blob, verify
from tests.escrow.package_support import flip, members, replaced

pytestmark = pytest.mark.django_db

SPANS = encode_spans(request_tree())


@pytest.fixture
def with_spans(live: Run, agent: APIClient, runner_work_dir: Path) -> Run:  # noqa: F811
    assert put_artefact(agent, live, "spans.jsonl", SPANS).status_code == 201
    put_output(agent, live, "metrics.json", METRICS)
    done = finish(
        agent, live, outputs={"metrics.json": METRICS}, artefacts={"spans.jsonl": SPANS}
    )
    assert done.json() == {"state": "succeeded"}
    return live


def test_the_owner_organisations_get_the_spans(
    with_spans: Run, buyer: Any, vendor_a: Any
) -> None:
    url = reverse("run-spans", args=[with_spans.public_id])

    response = api(buyer).get(url)

    assert response.status_code == 200
    assert response["Content-Type"] == "application/jsonl"
    body = b"".join(response.streaming_content)  # type: ignore[attr-defined]
    assert body == SPANS
    assert [s.name for s in read_spans(body).spans][:2] == ["orphan", "request"]
    assert api(vendor_a).get(url).status_code == 200


def test_other_organisations_and_strangers_get_404(
    with_spans: Run, vendor_b: Any, outsider: Any
) -> None:
    url = reverse("run-spans", args=[with_spans.public_id])

    assert api(vendor_b).get(url).status_code == 404
    assert api(outsider).get(url).status_code == 404
    assert APIClient().get(url).status_code in (401, 403)


def test_a_run_without_spans_answers_404(campaign: Campaign, buyer: Any) -> None:
    run = runs_of(campaign)[0]

    response = api(buyer).get(reverse("run-spans", args=[run.public_id]))

    assert response.status_code == 404


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"not json\n", "spans.jsonl line 1: not JSON"),
        (SPANS + b'{"trace_id": "x"}\n', "spans.jsonl line 8: span_id is missing"),
        (
            json.dumps({**span_from_json(json.loads(SPANS.splitlines()[0])).as_json(),
                        "end_ns": 1}).encode(),
            "end_ns is before start_ns",
        ),
    ],
)  # fmt: skip
def test_a_spans_file_with_a_bad_line_is_refused(
    live: Run,  # noqa: F811
    agent: APIClient,
    runner_work_dir: Path,
    data: bytes,
    says: str,
) -> None:
    response = put_artefact(agent, live, "spans.jsonl", data)

    assert response.status_code == 400
    assert response.json()["code"] == "artefact_invalid"
    assert says in response.json()["message"]


def test_the_openapi_document_describes_spans_jsonl() -> None:
    schema = APIClient().get("/api/v1/schema/", {"format": "json"}).json()

    operation = schema["paths"]["/api/v1/runs/{run_id}/spans.jsonl"]["get"]
    assert operation["operationId"] == "run_spans"
    assert list(operation["responses"]["200"]["content"]) == ["application/jsonl"]
    assert "404" in operation["responses"]


def test_the_campaign_evidence_package_holds_and_checks_the_spans(
    with_spans: Run, labops: Any, client_for: Any, tmp_path: Path
) -> None:
    url = f"/api/v1/campaigns/{with_spans.campaign.public_id}/evidence/"
    response = client_for(labops).get(url)
    assert response.status_code == 200
    package = tmp_path / "campaign.zip"
    package.write_bytes(b"".join(response.streaming_content))
    files = members(package)

    run, member = _run_blob(files, "artefact", "runner/spans.jsonl")
    assert run == str(with_spans.public_id)
    assert files[member] == SPANS
    assert verify(package)[0] == 0
    altered = replaced(package, tmp_path / "a.zip", member, flip(SPANS, 40))
    code, out = verify(altered)
    assert code == 1
    assert f"({member}) is altered" in out
