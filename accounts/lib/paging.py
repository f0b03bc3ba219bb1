"""One page size for every list, on pages and in the API: a list shows
``PAGE_SIZE`` rows unless asked for fewer or more, and never more than
``MAX_PAGE_SIZE`` (the API's ``?limit`` is cut to it)."""

from __future__ import annotations

from typing import Final

PAGE_SIZE: Final = 50
MAX_PAGE_SIZE: Final = 500
