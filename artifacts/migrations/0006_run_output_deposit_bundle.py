"""Run-output deposits made before their rows recorded the bundle that was run
(``bundle`` NULL while their log leaf names it): the row takes the bundle its
own leaf names, so row and log agree again. Nothing the log holds changes."""

from __future__ import annotations

import json
from typing import Any

from django.db import migrations


def fill_bundle(apps: Any, schema_editor: Any) -> None:
    Deposit = apps.get_model("artifacts", "Deposit")
    Bundle = apps.get_model("artifacts", "Bundle")
    rows = Deposit.objects.filter(kind="run_output", bundle__isnull=True)
    for deposit in rows.only("pk", "leaf").iterator():
        named = json.loads(bytes(deposit.leaf)).get("bundle")
        if not isinstance(named, str):
            continue
        bundle = Bundle.objects.filter(public_id=named).only("pk").first()
        if bundle is not None:
            Deposit.objects.filter(pk=deposit.pk).update(bundle_id=bundle.pk)


class Migration(migrations.Migration):
    dependencies = [("artifacts", "0005_escrow_release_and_fixity")]

    operations = [migrations.RunPython(fill_bundle, migrations.RunPython.noop)]
