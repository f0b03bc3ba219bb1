#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

from __future__ import annotations

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    if sys.argv[1:2] == ["makemigrations"]:
        # Writing or checking migrations signs nothing: a throwaway key lets it run
        # without the production secret (which the settings otherwise require).
        os.environ.setdefault("DJANGO_SECRET_KEY", "makemigrations-only-not-a-secret")
    from django.core.management import execute_from_command_line

    from config.env import load_settings_or_exit

    load_settings_or_exit(command=True)  # a bad setting: one line naming it, exit 3
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
