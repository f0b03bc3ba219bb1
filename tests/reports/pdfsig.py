"""Poppler's ``pdfsig`` as the tests' independent PDF signature checker, with an
NSS database trusting only the CAs a test names (``certutil``), and the RFC 3161
token check that ``pdfsig`` itself does not report (``pdfsig -dump``, then
``openssl asn1parse`` on the CMS). ``pdfsig`` exits 0 on a digest mismatch or an
untrusted issuer, so its output is parsed rather than its exit status read::

    result = pdfsig(path, nss_db(tmp_path, [signer.ca_pem]))
    assert result["valid"] and result["trusted"] and result["total_document_signed"]
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

TIMEOUT_SECONDS = 60


def _run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, capture_output=True, text=True, check=False, cwd=cwd,
        timeout=TIMEOUT_SECONDS,
    )  # fmt: skip


def nss_db(tmp_path: Path, ca_pems: Sequence[bytes]) -> Path:
    """A new NSS database under ``tmp_path`` trusting exactly ``ca_pems``."""
    folder = Path(tempfile.mkdtemp(prefix="nssdb-", dir=tmp_path))
    created = _run("certutil", "-N", "-d", f"sql:{folder}", "--empty-password")
    assert created.returncode == 0, created.stderr
    for index, pem in enumerate(ca_pems):
        ca_file = folder / f"ca{index}.pem"
        ca_file.write_bytes(pem)
        added = _run(
            "certutil", "-A", "-d", f"sql:{folder}", "-n", f"test-ca-{index}",
            "-t", "CT,C,C", "-i", str(ca_file),
        )  # fmt: skip
        assert added.returncode == 0, added.stderr
    return folder


def pdfsig(pdf_path: Path, nssdb: Path) -> dict[str, Any]:
    """What ``pdfsig`` says of the first signature: ``valid`` ("Signature is
    Valid."), ``trusted`` ("Certificate is Trusted."), ``total_document_signed``,
    the two validation lines as said, the number of signatures and the output."""
    done = _run("pdfsig", "-nssdir", f"sql:{nssdb.resolve()}", str(pdf_path))
    output = done.stdout + done.stderr
    signatures = len(re.findall(r"^Signature #\d+:", output, re.MULTILINE))
    first = output.split("Signature #2:")[0]
    signature = _field(first, "Signature Validation")
    certificate = _field(first, "Certificate Validation")
    return {
        "signatures": signatures,
        "valid": signature == "Signature is Valid.",
        "trusted": certificate == "Certificate is Trusted.",
        "total_document_signed": "Total document signed" in first,
        "signature_validation": signature,
        "certificate_validation": certificate,
        "returncode": done.returncode,
        "output": output,
    }


def _field(text: str, name: str) -> str:
    found = re.search(rf"^\s*- {re.escape(name)}: (.*)$", text, re.MULTILINE)
    return found.group(1).strip() if found else ""


def has_timestamp(pdf_path: Path) -> bool:
    """Whether the first signature's CMS carries an RFC 3161 timeStampToken."""
    with tempfile.TemporaryDirectory() as folder:
        absolute = str(Path(pdf_path).resolve())
        dumped = _run("pdfsig", "-dump", absolute, cwd=Path(folder))
        assert dumped.returncode == 0, dumped.stdout + dumped.stderr
        cms = Path(folder) / f"{Path(pdf_path).name}.sig0"
        assert cms.is_file(), f"pdfsig dumped no signature: {dumped.stdout}"
        parsed = _run("openssl", "asn1parse", "-inform", "DER", "-in", str(cms))
        assert parsed.returncode == 0, parsed.stderr
        return "timeStampToken" in parsed.stdout
