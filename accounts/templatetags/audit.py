"""``{{ event.action|action_label }}``: the human label of an audit action code."""

from __future__ import annotations

from django import template

from accounts.lib.audit_labels import action_label as label_of

register = template.Library()


@register.filter
def action_label(code: str) -> str:
    return label_of(code)
