"""plotly.js comes from the installed ``plotly`` package, not from a CDN and not
from a copy in the repository: this finder serves that one file as
``vendor/plotly/plotly.min.js`` (``collectstatic`` and whitenoise pick it up like
any other static file)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import plotly
from django.contrib.staticfiles.finders import BaseFinder
from django.core.files.storage import FileSystemStorage

PREFIX = "vendor/plotly"
NAME = "plotly.min.js"
PACKAGE_DATA = Path(plotly.__file__).resolve().parent / "package_data"


class PlotlyFinder(BaseFinder):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.storage = FileSystemStorage(location=PACKAGE_DATA)
        self.storage.prefix = PREFIX  # type: ignore[attr-defined]

    def check(self, **kwargs: Any) -> list[Any]:
        return []

    def find(self, path: str, find_all: bool = False, **kwargs: Any) -> Any:
        if path != f"{PREFIX}/{NAME}" or not (PACKAGE_DATA / NAME).is_file():
            return [] if find_all else None
        found = str(PACKAGE_DATA / NAME)
        return [found] if find_all else found

    def list(self, ignore_patterns: Any) -> Iterator[tuple[str, FileSystemStorage]]:
        if (PACKAGE_DATA / NAME).is_file():
            yield NAME, self.storage
