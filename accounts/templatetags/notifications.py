"""``{{ notification.url|link_label }}``: what a notification's link opens."""

from __future__ import annotations

from django import template

from accounts.services.notifications import notification_link_label

register = template.Library()


@register.filter
def link_label(url: str) -> str:
    return notification_link_label(url)
