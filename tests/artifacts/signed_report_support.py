"""Report PDFs for the signed-report tests: a WeasyPrint page signed with
pyHanko (the product's own ``gates.lib.signing`` with a self-made CA and
signer), the same with one signed byte flipped, and in-toto statements about a
PDF in DSSE envelopes signed with a corpus key."""

from __future__ import annotations

import hashlib
import re
from typing import Any

import weasyprint  # type: ignore[import-untyped]

from artifacts.lib.canonical import canonical_json
from artifacts.lib.signatures import dsse
from artifacts.lib.signatures.sshkeys import (
    SshPublicKey,
    load_private_key,
    parse_public_key_line,
)
from artifacts.lib.signatures.statement import PAYLOAD_TYPE, statement
from gates.lib.signing.pades import sign_pdf
from gates.lib.signing.pki import ReportSigner
from tests.artifacts.corpus.build import corpus_key

HTML = """<!doctype html><html><head><meta charset="utf-8"></head><body>
<h1>Acme Flash benchmark report</h1><p>p99 TTFT 180 ms at 32 users.</p></body></html>"""
PREDICATE_TYPE = "https://reprogate.example/report-claims/v1"
CLAIMS = {"ttft_ms_p99": 180, "users": 32, "scenario": "steady"}


def render_pdf() -> bytes:
    return bytes(weasyprint.HTML(string=HTML).write_pdf())


def signed(pdf: bytes, signer: ReportSigner, timestamp_url: str = "") -> bytes:
    return sign_pdf(pdf, signer, reason="Benchmark report", timestamp_url=timestamp_url)


def flipped(data: bytes) -> bytes:
    """``data`` with one byte of the first page's content changed: inside the
    signature's byte range, outside its ``/Contents``."""
    found = re.search(rb"/ByteRange\s*\[\s*(\d+) (\d+) (\d+) (\d+)\s*\]", data)
    assert found, "no /ByteRange"
    changed = bytearray(data)
    offset = changed.index(b"stream") + 20
    assert offset < int(found.group(2))
    changed[offset] ^= 0x01
    return bytes(changed)


def envelope(
    pdf: bytes,
    *,
    key: str = "vendor_a",
    digest: str | None = None,
    predicate: dict[str, Any] | None = None,
    payload_type: str = PAYLOAD_TYPE,
) -> bytes:
    """A DSSE envelope of an in-toto statement naming ``pdf`` (or ``digest``)."""
    document = statement(
        subjects=[("reports/bench.pdf", digest or hashlib.sha256(pdf).hexdigest())],
        predicate_type=PREDICATE_TYPE,
        predicate=CLAIMS if predicate is None else predicate,
    )
    private = load_private_key(corpus_key(key).private_openssh())
    return dsse.sign(canonical_json(document), private, payload_type=payload_type)


def public_keys(*names: str) -> list[SshPublicKey]:
    return [parse_public_key_line(corpus_key(name).public_line) for name in names]
