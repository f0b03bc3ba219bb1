"""Content negotiation for the views that offer more than one format."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.http import Http404
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request


class StrictFormatNegotiation(DefaultContentNegotiation):
    """DRF's negotiation, but a ``format`` query parameter given empty is an
    unknown format (404, as any other unknown one) instead of being ignored: the
    documented values are the only ones answered."""

    def select_renderer(
        self,
        request: Request,
        renderers: Iterable[BaseRenderer],
        format_suffix: str | None = None,
    ) -> Any:
        override = self.settings.URL_FORMAT_OVERRIDE
        if not format_suffix and override and request.query_params.get(override) == "":
            raise Http404("No such format.")
        return super().select_renderer(request, renderers, format_suffix)
