from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path

from accounts.views import users as views

app_name = "accounts"
urlpatterns = [
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("password/", views.password_change, name="password_change"),
    path("profile/", views.profile, name="profile"),
    path("profile/tokens/", views.api_token_create, name="api_token_create"),
    path(
        "profile/tokens/<uuid:token_id>/revoke/",
        views.api_token_revoke_view,
        name="api_token_revoke",
    ),
    path("audit/", views.audit_list, name="audit_list"),
    path("audit/export.csv", views.audit_export, {"fmt": "csv"}, name="audit_csv"),
    path("audit/export.json", views.audit_export, {"fmt": "json"}, name="audit_json"),
    path("notifications/", views.notification_list, name="notifications"),
]
