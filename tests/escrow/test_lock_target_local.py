"""On local files there is nothing to lock, and finding that out does not load
boto3 (about 0.1 s, once per process: it showed in every ingest benchmark)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = """
import sys, django
django.setup()
from artifacts.storage.object_lock import lock_target
print(lock_target(), "boto3" in sys.modules)
"""


def test_lock_target_on_local_files_is_none_without_importing_boto3(
    tmp_path: Path,
) -> None:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DJANGO_SECRET_KEY": "insecure-test-key",
        "DJANGO_DEBUG": "True",
        "REPROGATE_VAR_DIR": str(tmp_path),
    }
    env.pop("AWS_STORAGE_BUCKET_NAME", None)

    done = subprocess.run(
        [sys.executable, "-c", PROGRAM],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["None", "False"]
