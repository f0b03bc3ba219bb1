"""The gates API (DESIGN §8): gate board, evaluations, plans, decisions,
re-test obligations."""

from __future__ import annotations

from django.urls import URLPattern

urlpatterns: list[URLPattern] = []
