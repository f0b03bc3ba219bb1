from __future__ import annotations

from django.apps import AppConfig


class ArtifactsConfig(AppConfig):
    name = "artifacts"

    def ready(self) -> None:
        # procurement reads bundle completeness through its provider registry
        # (it must not import artifacts); artifacts plugs itself in here.
        from artifacts.selectors.procurement_hooks import register

        register()
