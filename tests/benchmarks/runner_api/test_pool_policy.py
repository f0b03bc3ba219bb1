"""A pool's device and endpoint policy: set by its lab operators (service,
API, ``manage.py pool_policy``, the pools page), every problem named with its
path; refused to others; recorded on each run at its claim and sent to the
agent with it; shown on the run page."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from accounts.exceptions import ApplicationError
from accounts.models import AuditEvent, Role
from benchmarks.models import Campaign, LabPool, Run
from benchmarks.services.pools import pool_policy_set
from tests.accounts.factories import MembershipFactory, OrganisationFactory, UserFactory
from tests.benchmarks.runner.support import runs_of
from tests.benchmarks.runner_api.support import claim, hello

pytestmark = pytest.mark.django_db

POLICY: dict[str, Any] = {
    "schema": "reprogate.lab-policy/v1",
    "devices": [{"name": "reprogate.dev/block=scratch0", "access": "rw"}],
    "endpoints": [{"name": "kv-tier", "address": "tcp:127.0.0.1:10809"}],
}
BAD: dict[str, Any] = {
    "schema": "reprogate.lab-policy/v1",
    "devices": [{"name": "gpu0", "access": "w"}],
}


def api(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def url(pool: LabPool) -> str:
    return reverse("lab-pool-policy", args=[pool.name])


def test_the_service_sets_it_with_one_audit_row(pool: LabPool, labops: Any) -> None:
    pool_policy_set(pool=pool, policy=POLICY, actor=labops)

    pool.refresh_from_db()
    assert pool.policy == POLICY
    [event] = AuditEvent.objects.filter(action="lab_pool.policy_set")
    assert event.data["policy"] == POLICY
    assert event.data["before"] == {}


def test_the_service_names_each_problem_and_changes_nothing(
    pool: LabPool, labops: Any
) -> None:
    with pytest.raises(ApplicationError) as refused:
        pool_policy_set(pool=pool, policy=BAD, actor=labops)

    assert [(p.path, p.code) for p in refused.value.problems] == [
        ("devices[0].name", "policy_invalid"),
        ("devices[0].access", "policy_invalid"),
    ]
    pool.refresh_from_db()
    assert pool.policy == {}
    assert not AuditEvent.objects.filter(action="lab_pool.policy_set").exists()


def test_the_api_reads_and_sets_it_for_the_pool_operator(
    pool: LabPool, labops: Any
) -> None:
    client = api(labops)
    assert client.get(url(pool)).json()["policy"] == {}

    response = client.put(url(pool), POLICY, format="json")

    assert response.status_code == 200, response.json()
    assert client.get(url(pool)).json()["policy"] == POLICY
    bad = client.put(url(pool), BAD, format="json")
    assert bad.status_code == 400
    paths = [p["path"] for p in bad.json()["problems"]]
    assert paths == ["devices[0].name", "devices[0].access"]


def test_the_api_refuses_others(pool: LabPool, buyer: Any) -> None:
    other_lab = OrganisationFactory.create(slug="other-lab", kind="lab")
    stranger = UserFactory.create(username="stranger-ops")
    MembershipFactory.create(user=stranger, organisation=other_lab, role=Role.LABOPS)

    assert api(buyer).get(url(pool)).status_code == 403
    assert api(buyer).put(url(pool), POLICY, format="json").status_code == 403
    assert api(stranger).get(url(pool)).status_code == 404
    assert api(stranger).put(url(pool), POLICY, format="json").status_code == 404
    assert APIClient().get(url(pool)).status_code in (401, 403)
    pool.refresh_from_db()
    assert pool.policy == {}


def test_the_command_sets_and_prints_it(pool: LabPool, tmp_path: Path) -> None:
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(POLICY))
    bad.write_text(json.dumps(BAD))
    out = io.StringIO()

    call_command("pool_policy", pool.name, str(good), stdout=out)

    assert "1 device(s), 1 endpoint(s)" in out.getvalue()
    with pytest.raises(CommandError, match=r"devices\[0\]\.access"):
        call_command("pool_policy", pool.name, str(bad))
    printed = io.StringIO()
    call_command("pool_policy", pool.name, stdout=printed)
    assert json.loads(printed.getvalue()) == POLICY


def test_the_pool_page_shows_and_edits_it_keeping_a_refused_text(
    client_for: Any, labops: Any, pool: LabPool
) -> None:
    client: Client = client_for(labops)
    edit = reverse("benchmarks:pool_policy_edit", args=[pool.public_id])
    typed = json.dumps(BAD) + " "

    refused = client.post(edit, {"policy": typed})

    assert refused.status_code == 400
    page = refused.content.decode()
    assert "devices[0].access: must be" in page
    assert json.dumps(BAD).replace('"', "&quot;") in page  # nothing lost
    assert client.post(edit, {"policy": "{not json"}).status_code == 400
    saved = client.post(edit, {"policy": json.dumps(POLICY)})
    assert saved.status_code == 302
    shown = client.get(reverse("benchmarks:pool_list")).content.decode()
    assert 'data-testid="pool-policy-current"' in shown
    assert "reprogate.dev/block=scratch0" in shown


def test_each_run_records_the_policy_at_its_claim(
    agent: APIClient, campaign: Campaign, pool: LabPool, labops: Any, client_for: Any
) -> None:
    pool_policy_set(pool=pool, policy=POLICY, actor=labops)
    run = runs_of(campaign)[0]
    hello(agent)

    answer = claim(agent, run).json()

    assert answer["run"]["policy"] == POLICY
    run = Run.objects.get(pk=run.pk)
    assert run.policy == POLICY
    pool_policy_set(pool=pool, policy={}, actor=labops)  # later changes: not this run's
    assert Run.objects.get(pk=run.pk).policy == POLICY
    page = client_for(labops).get(
        reverse("benchmarks:run_detail", args=[run.public_id])
    )
    assert 'data-testid="run-policy"' in page.content.decode()
    assert "kv-tier" in page.content.decode()


def test_the_pool_page_says_when_harnesses_run_file_backed(
    client_for: Any, labops: Any, pool: LabPool
) -> None:
    client: Client = client_for(labops)
    page = reverse("benchmarks:pool_list")
    note = 'data-testid="pool-policy-file-backed"'

    assert note in client.get(page).content.decode()
    pool_policy_set(pool=pool, policy=POLICY, actor=labops)
    assert note not in client.get(page).content.decode()
