from __future__ import annotations

from artifacts.escrow_views import urlpatterns as escrow_urlpatterns
from artifacts.fixity_views import urlpatterns as fixity_urlpatterns
from artifacts.release_views import urlpatterns as release_urlpatterns
from artifacts.views import urlpatterns as views_urlpatterns

app_name = "artifacts"
urlpatterns = [
    *views_urlpatterns,
    *escrow_urlpatterns,
    *release_urlpatterns,
    *fixity_urlpatterns,
]
