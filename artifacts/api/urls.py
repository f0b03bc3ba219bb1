from __future__ import annotations

from artifacts.api import bundles, escrow, keys, log, release

urlpatterns = [
    *keys.urlpatterns,
    *bundles.urlpatterns,
    *log.urlpatterns,
    *escrow.urlpatterns,
    *release.urlpatterns,
]
