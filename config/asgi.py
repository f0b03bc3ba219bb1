from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

from config.env import load_settings_or_exit

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
load_settings_or_exit()  # a bad setting: one line naming it, the server stops
application = get_asgi_application()
