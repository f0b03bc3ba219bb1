"""The procurement app's settings, read when used (so tests can change them);
this module is the app's only reader of ``django.conf.settings`` (models name
``AUTH_USER_MODEL`` as Django asks):

- ``PROCUREMENT_BID_DOCUMENT_MAX_BYTES`` (100 MiB): the largest document a vendor
  attaches to a bid.
"""

from __future__ import annotations

from django.conf import settings

DEFAULT_BID_DOCUMENT_MAX_BYTES = 100 * 1024 * 1024


def bid_document_max_bytes() -> int:
    return int(
        getattr(
            settings,
            "PROCUREMENT_BID_DOCUMENT_MAX_BYTES",
            DEFAULT_BID_DOCUMENT_MAX_BYTES,
        )
    )
