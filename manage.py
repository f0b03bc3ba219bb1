#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

from __future__ import annotations

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    # (unless a key file is named, as scripts/manage names the one it generates)
    if (
        sys.argv[1:2] == ["makemigrations"]
        and "DJANGO_SECRET_KEY_FILE" not in os.environ
    ):
        # Writing or checking migrations signs nothing: a throwaway key lets it run
        # without the production secret (which the settings otherwise require).
        os.environ.setdefault("DJANGO_SECRET_KEY", "makemigrations-only-not-a-secret")
    from django.core.management import execute_from_command_line

    from config.env import load_settings_or_exit

    load_settings_or_exit(command=True)  # a bad setting: one line naming it, exit 3
    from django.db import DatabaseError

    try:
        execute_from_command_line(sys.argv)
    except DatabaseError:
        if not _database_unmigrated():
            raise
        print(
            "ReproGate: the database has no tables yet: start scripts/run once, "
            "or run scripts/manage migrate (manage.py migrate)",
            file=sys.stderr,
        )
        sys.exit(1)


def _database_unmigrated() -> bool:
    """Whether migrations are pending: a command on a fresh database fails on a
    missing table, which says nothing to someone who never started the product."""
    from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections
    from django.db.migrations.executor import MigrationExecutor

    try:
        connection = connections[DEFAULT_DB_ALIAS]
        executor = MigrationExecutor(connection)
        return bool(executor.migration_plan(executor.loader.graph.leaf_nodes()))
    except DatabaseError:
        return False


if __name__ == "__main__":
    main()
