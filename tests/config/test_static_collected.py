"""collectstatic's compression (scripts/run collects at every start): a file's
brotli and gzip variants are made once and kept while they decompress to the
file's bytes, so collecting again after nothing changed skips brotli; a changed
or broken variant is made again."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import brotli  # type: ignore[import-untyped]

from config.staticfinders import CompressedManifestStaticFilesStorage

TEXT = b"body { color: #123456; }\n" * 400


def _compress(path: Path) -> list[str]:
    storage = CompressedManifestStaticFilesStorage(location=str(path.parent))
    return sorted(storage.create_compressor(quiet=True).compress(str(path)))


def _age(*paths: Path) -> None:
    for path in paths:
        os.utime(path, (1_000_000_000, 1_000_000_000))


def test_variants_are_made_then_kept_while_they_match(tmp_path: Path) -> None:
    css = tmp_path / "app.0123456789ab.css"
    css.write_bytes(TEXT)
    br, gz = Path(f"{css}.br"), Path(f"{css}.gz")

    assert _compress(css) == [str(br), str(gz)]
    assert brotli.decompress(br.read_bytes()) == TEXT
    assert gzip.decompress(gz.read_bytes()) == TEXT
    _age(br, gz)
    os.utime(css)  # collectstatic rewrote it: a new time, the same bytes

    assert _compress(css) == [str(br), str(gz)]
    assert br.stat().st_mtime == gz.stat().st_mtime == 1_000_000_000  # kept


def test_a_changed_file_or_a_broken_variant_is_compressed_again(
    tmp_path: Path,
) -> None:
    css = tmp_path / "app.css"
    css.write_bytes(TEXT)
    _compress(css)
    br, gz = Path(f"{css}.br"), Path(f"{css}.gz")

    css.write_bytes(TEXT + b"a { color: red; }\n")
    _compress(css)
    assert gzip.decompress(gz.read_bytes()) == css.read_bytes()
    assert brotli.decompress(br.read_bytes()) == css.read_bytes()

    br.write_bytes(b"not brotli")
    _compress(css)
    assert brotli.decompress(br.read_bytes()) == css.read_bytes()
