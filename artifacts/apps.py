from __future__ import annotations

from django.apps import AppConfig


class ArtifactsConfig(AppConfig):
    name = "artifacts"

    def ready(self) -> None:
        # procurement reads bundle completeness and a vendor's own bundles through
        # its registries (it must not import artifacts); artifacts fills them here.
        from artifacts.selectors.procurement_hooks import (
            bundle_declarations,
            bundle_evidence,
            own_bundles,
        )
        from procurement.selectors.evidence_sources import (
            bundle_source,
            evidence_provider,
        )
        from procurement.selectors.fidelity_sources import declared_source

        evidence_provider.register(bundle_evidence)
        bundle_source.register(own_bundles)
        declared_source.register(bundle_declarations)
