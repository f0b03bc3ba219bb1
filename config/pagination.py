"""The API's one paginator: ``?limit`` and ``?offset`` pages whose limit is cut to
``MAX_LIMIT``, so a number beyond the database's integers never reaches a query
(an offset past the end is an empty page before any query)."""

from __future__ import annotations

from rest_framework import pagination

MAX_LIMIT = 500


class LimitOffsetPagination(pagination.LimitOffsetPagination):
    max_limit = MAX_LIMIT
