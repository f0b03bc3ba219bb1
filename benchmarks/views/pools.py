"""The lab operator's pools page: pools with their hosts (online, lost,
offline) and host tokens, a form to add a pool, and per pool a form to join a
host (it shows the agent's command once), a revoke button per token, and per
host its pinned signing key's fingerprint, with an accept button when the host
offered another key.

Only the pool's lab operators may join or revoke: anyone else gets 404 (the
pool's existence is not revealed)."""

from __future__ import annotations

import json
import uuid
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from accounts.exceptions import ApplicationError, StateConflict
from accounts.views.requests import SignedInRequest
from benchmarks import conf
from benchmarks.forms.lab import HostJoinForm, PoolCreateForm, PoolPolicyForm
from benchmarks.models import LabPool
from benchmarks.selectors.access import lab_organisation_list_for, pool_list_operated_by
from benchmarks.selectors.pools import host_token_get, pool_get_in, pool_list_with_hosts
from benchmarks.services.host_join import BROKER_PASSWORD_PLACEHOLDER, host_join
from benchmarks.services.host_keys import host_key_accept
from benchmarks.services.host_tokens import host_token_revoke
from benchmarks.services.pools import pool_create, pool_policy_set


def _page(request: SignedInRequest, *, status: int = 200, **extra: Any) -> HttpResponse:
    pools = pool_list_with_hosts(pool_list_operated_by(request.user))
    for pool in pools:  # the one pool a join was tried on carries its outcome
        target = pool.pk == extra.get("pool_id")
        pool.join_form = extra.get("join_form") if target else HostJoinForm()  # type: ignore[attr-defined]
        pool.joined = extra.get("joined") if target else None  # type: ignore[attr-defined]
        policy_text = (
            json.dumps(pool.policy, indent=2, sort_keys=True) if pool.policy else ""
        )
        pool.policy_json = policy_text  # type: ignore[attr-defined]
        pool.policy_form = (  # type: ignore[attr-defined]
            extra.get("policy_form")
            if target and extra.get("policy_form")
            else PoolPolicyForm(initial={"policy": policy_text})
        )
    context = {
        "pools": pools,
        "form": extra.get("form") or PoolCreateForm(request.user),
        "lost_after": int(conf.lost_after_seconds()),
        "password_placeholder": BROKER_PASSWORD_PLACEHOLDER,
    }
    response = render(request, "benchmarks/pool_list.html", context, status=status)
    response["Cache-Control"] = "no-store"  # a join's answer holds the token
    return response


def _operated_pool(request: SignedInRequest, pool_id: uuid.UUID) -> LabPool:
    pool = pool_get_in(pool_list_operated_by(request.user), pool_id)
    if pool is None:
        raise Http404("No such pool.")
    return pool


@login_required
def pool_list(request: SignedInRequest) -> HttpResponse:
    if not lab_organisation_list_for(request.user).exists():
        raise PermissionDenied("Only lab operators manage pools.")
    form = PoolCreateForm(request.user, request.POST or None)
    if form.is_bound and form.is_valid():
        try:
            pool = pool_create(actor=request.user, **form.cleaned_data)
        except ApplicationError as error:
            form.add_error(
                "name" if error.code == "pool_exists" else None, error.message
            )
        else:
            messages.success(request, f"Pool {pool.name} created: queue {pool.queue}.")
            return redirect("benchmarks:pool_list")
    return _page(request, form=form, status=400 if form.is_bound else 200)


@login_required
@require_POST
def pool_host_join(request: SignedInRequest, pool_id: uuid.UUID) -> HttpResponse:
    """Issue a host token; the answer (never a redirect) shows the command once."""
    pool = _operated_pool(request, pool_id)
    form, status = HostJoinForm(request.POST), 400
    if form.is_valid():
        try:
            joined = host_join(
                pool=pool, name=form.cleaned_data["name"], actor=request.user
            )
        except ApplicationError as error:
            form.add_error("name", error.message)
            status = 409 if isinstance(error, StateConflict) else 400
        else:
            return _page(request, pool_id=pool.pk, join_form=form, joined=joined)
    return _page(request, pool_id=pool.pk, join_form=form, status=status)


@login_required
@require_POST
def pool_token_revoke(
    request: SignedInRequest, pool_id: uuid.UUID, token_id: uuid.UUID
) -> HttpResponse:
    pool = _operated_pool(request, pool_id)
    token = host_token_get(pool, token_id)
    if token is None:
        raise Http404("No such host token.")
    try:
        host_token_revoke(token=token, actor=request.user)
    except ApplicationError as error:
        messages.error(request, error.message)
    else:
        messages.success(
            request,
            f"Token {token.prefix}… of {token.name} revoked: its agent is refused "
            "at its next call.",
        )
    return redirect("benchmarks:pool_list")


@login_required
@require_POST
def pool_policy_edit(request: SignedInRequest, pool_id: uuid.UUID) -> HttpResponse:
    """Set the pool's policy; a refused one is shown again, as typed, with its
    problems."""
    pool = _operated_pool(request, pool_id)
    form = PoolPolicyForm(request.POST)
    if form.is_valid():
        try:
            pool_policy_set(
                pool=pool, policy=form.cleaned_data["policy"], actor=request.user
            )
        except ApplicationError as error:
            for problem in error.problems:
                form.add_error("policy", f"{problem.path}: {problem.message}")
            if not error.problems:
                form.add_error("policy", error.message)
        else:
            messages.success(request, f"Policy of {pool.name} saved.")
            return redirect("benchmarks:pool_list")
    return _page(request, pool_id=pool.pk, policy_form=form, status=400)


@login_required
@require_POST
def pool_host_key_accept(
    request: SignedInRequest, pool_id: uuid.UUID, host_id: uuid.UUID
) -> HttpResponse:
    """Pin the key the host offered (the fingerprint the page showed)."""
    pool = _operated_pool(request, pool_id)
    host = pool.hosts.filter(public_id=host_id).first()
    if host is None:
        raise Http404("No such host.")
    try:
        host = host_key_accept(
            host=host,
            fingerprint_shown=request.POST.get("fingerprint", "")[:60],
            actor=request.user,
        )
    except ApplicationError as error:
        messages.error(request, error.message)
    else:
        messages.success(
            request,
            f"{host.worker_name} signs with {host.signing_key_fingerprint} from now "
            "on: the statements it signed before stay as they were verified.",
        )
    return redirect("benchmarks:pool_list")
