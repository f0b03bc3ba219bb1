"""plotly.js comes from the installed ``plotly`` package, not from a CDN and not
from a copy in the repository: this finder serves that one file (4.8 MB) under a
versioned name, ``vendor/plotly/plotly-<plotly.js version>.min.js``, compressed and
cached for good.

* Templates name it ``vendor/plotly/plotly.min.js``; the staticfiles storages below
  turn that into the versioned name, so a new plotly.js is a new URL.
* Embedded default (DEBUG, whitenoise serving through the finders): the finder
  answers with a copy under ``STATIC_VENDOR_CACHE`` that has ``.gz`` (and ``.br``
  when the ``brotli`` module is installed) beside it, made once per version;
  whitenoise sends the encoding the browser accepts, and ``immutable_file_test``
  gives the versioned name a ten-year ``Cache-Control``.
* Production and ``scripts/run`` (``collectstatic`` with whitenoise's compressed
  manifest storage, ``REPROGATE_STATIC_COLLECTED``): the storage adds a content
  hash to every name (plotly.js's versioned one included) and writes the gzip and
  brotli variants; hashed names are immutable as whitenoise has them by default.
  A variant already beside a file that it decompresses to is kept, not made
  again: collecting again after nothing changed skips brotli, which takes most
  of a first collection's time.
"""

from __future__ import annotations

import gzip
import os
import posixpath
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import plotly
from django.conf import settings
from django.contrib.staticfiles.finders import BaseFinder
from django.contrib.staticfiles.storage import (
    StaticFilesStorage as DjangoStaticFilesStorage,
)
from django.contrib.staticfiles.storage import staticfiles_storage
from django.core.files.storage import FileSystemStorage
from plotly.offline import get_plotlyjs_version
from whitenoise.compress import Compressor
from whitenoise.storage import (
    CompressedManifestStaticFilesStorage as WhitenoiseManifestStorage,
)

PREFIX = "vendor/plotly"
SOURCE_NAME = "plotly.min.js"
PACKAGE_DATA = Path(plotly.__file__).resolve().parent / "package_data"
SOURCE = PACKAGE_DATA / SOURCE_NAME
PLOTLY_JS_VERSION = get_plotlyjs_version()
NAME = f"plotly-{PLOTLY_JS_VERSION}.min.js"
LOGICAL = f"{PREFIX}/{SOURCE_NAME}"  # what templates write
VERSIONED = f"{PREFIX}/{NAME}"  # what is served
_MANIFEST_DIGEST = re.compile(r"\.[0-9a-f]{12}")


def versioned_name(name: str) -> str:
    """The served name of a static file: plotly.js carries its version."""
    return VERSIONED if name == LOGICAL else name


def _cache_dir() -> Path:
    return Path(settings.STATIC_VENDOR_CACHE) / PREFIX


def _fresh(copy: Path) -> bool:
    try:
        have, want = copy.stat(), SOURCE.stat()
    except OSError:
        return False
    return (have.st_size, int(have.st_mtime)) == (want.st_size, int(want.st_mtime))


def prepared_copy() -> Path | None:
    """The versioned copy of plotly.js with its compressed variants beside it, made
    when missing or stale. The variants are renamed into place before the copy, so
    whoever sees the copy sees them too; concurrent callers each write their own
    temporary files. None without plotly.js; the package's file itself (served
    uncompressed) when the cache cannot be written."""
    if not SOURCE.is_file():
        return None
    target = _cache_dir() / NAME
    if _fresh(target):
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=target.parent, prefix=".tmp-") as work:
            staged = Path(work) / NAME
            shutil.copy2(SOURCE, staged)
            # gzip only: brotli at whitenoise's quality takes about 10 s for
            # plotly.js's 4.8 MB, and this copy is made on a page's first request
            # (collectstatic, at build time, makes the brotli variant too)
            compressor = Compressor(quiet=True, use_brotli=False)
            for variant in compressor.compress(str(staged)):
                os.replace(variant, target.parent / Path(variant).name)
            os.replace(staged, target)
    except OSError:
        return SOURCE
    return target


class PlotlyFinder(BaseFinder):
    def check(self, **kwargs: Any) -> list[Any]:
        return []

    def find(self, path: str, find_all: bool = False, **kwargs: Any) -> Any:
        found: Path | None = None
        if path == VERSIONED:
            found = prepared_copy()
        elif path == LOGICAL and SOURCE.is_file():
            found = SOURCE  # the plain name still resolves (uncompressed, uncached)
        if found is None:
            # [] even for a single match: django's find() turns a None into [None],
            # which whitenoise then tries to open (a 500 for any unknown file)
            return []
        return [str(found)] if find_all else str(found)

    def list(self, ignore_patterns: Any) -> Iterator[tuple[str, FileSystemStorage]]:
        """For collectstatic: the versioned name only (the storage compresses)."""
        if SOURCE.is_file():
            yield NAME, _PackageStorage(location=PACKAGE_DATA)


class _PackageStorage(FileSystemStorage):
    """plotly's package data, where the versioned name reads the package's file."""

    prefix = PREFIX

    def path(self, name: str) -> str:
        return super().path(SOURCE_NAME if name == NAME else name)


class _VersionedNames:
    def url(self, name: str | None, *args: Any, **kwargs: Any) -> str:
        return super().url(  # type: ignore[misc]
            versioned_name(name) if name else name, *args, **kwargs
        )


class StaticFilesStorage(_VersionedNames, DjangoStaticFilesStorage):
    """DEBUG: plain names, plotly.js under its versioned one."""


class _KeepingCompressor(Compressor):
    """whitenoise's compressor, which leaves a file's variants alone when each
    decompresses to the file's bytes: collectstatic rewrites every stylesheet and
    script it adjusts (a new modification time, the same bytes), and brotli at
    whitenoise's quality costs seconds per megabyte where decompressing costs
    milliseconds."""

    def compress(self, path: str) -> list[str]:
        suffixes = [".br"] * self.use_brotli + [".gz"] * self.use_gzip
        try:
            data = Path(path).read_bytes()
            if suffixes and all(
                _decompressed(path + suffix) == data for suffix in suffixes
            ):
                return [path + suffix for suffix in suffixes]
        except Exception:  # noqa: S110 - a missing or broken variant is made again
            pass
        return list(super().compress(path))


def _decompressed(variant: str) -> bytes:
    data = Path(variant).read_bytes()
    if variant.endswith(".gz"):
        return gzip.decompress(data)
    import brotli  # type: ignore[import-untyped]

    return bytes(brotli.decompress(data))


class CompressedManifestStaticFilesStorage(_VersionedNames, WhitenoiseManifestStorage):
    """Production and scripts/run: whitenoise's hashed and compressed files,
    plotly.js versioned, the compressed variants of unchanged files kept."""

    def create_compressor(self, **kwargs: Any) -> Compressor:
        return _KeepingCompressor(**kwargs)


def immutable_file_test(path: str, url: str) -> bool:
    """Whether whitenoise may let browsers keep ``url`` for good: the versioned
    plotly.js, and a name with a manifest hash that the manifest maps back to (as
    whitenoise decides by default)."""
    prefix = "/" + urlsplit(settings.STATIC_URL or "/").path.strip("/") + "/"
    prefix = prefix.replace("//", "/")
    if not url.startswith(prefix):
        return False
    name = url[len(prefix) :]
    if name == VERSIONED:
        return True
    stem, ext = posixpath.splitext(name)
    base, digest = posixpath.splitext(stem)
    if not _MANIFEST_DIGEST.fullmatch(digest):
        return False
    try:
        hashed = staticfiles_storage.url(base + ext)
    except ValueError:
        return False
    return posixpath.basename(urlsplit(hashed).path) == posixpath.basename(name)
