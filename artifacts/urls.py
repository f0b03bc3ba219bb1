from __future__ import annotations

from artifacts.views.bundles import urlpatterns as views_urlpatterns
from artifacts.views.escrow import urlpatterns as escrow_urlpatterns
from artifacts.views.fixity import urlpatterns as fixity_urlpatterns
from artifacts.views.release import urlpatterns as release_urlpatterns

app_name = "artifacts"
urlpatterns = [
    *views_urlpatterns,
    *escrow_urlpatterns,
    *release_urlpatterns,
    *fixity_urlpatterns,
]
