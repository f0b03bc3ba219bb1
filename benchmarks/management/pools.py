"""What the pool commands share: the pool named on the command line."""

from __future__ import annotations

from django.core.management.base import CommandError

from benchmarks.models import LabPool


def pool_named(name: str) -> LabPool:
    pool = LabPool.objects.select_related("lab_organisation").filter(name=name).first()
    if pool is None:
        known = ", ".join(LabPool.objects.values_list("name", flat=True)[:20])
        raise CommandError(
            f"No pool named {name!r} (pools: {known or 'none yet'}).", returncode=2
        )
    return pool
