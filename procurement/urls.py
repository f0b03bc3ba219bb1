from __future__ import annotations

from django.urls import path

from procurement import views

app_name = "procurement"
urlpatterns = [
    path("", views.rfp_list, name="rfp_list"),
    path("<uuid:rfp_id>/", views.rfp_detail, name="rfp_detail"),
]
