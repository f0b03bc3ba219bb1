"""What can be wrong with an artifact bundle: one ``BundleProblem`` per finding.

The codes are a stable contract: tests, the API (``problems[].code``), the UI and
the offline verifier rely on them. Add codes; never rename or reuse one. Each code
has a one-line plain-language explanation in ``PROBLEM_CODES`` (shown beside the
specific message of every problem).

No Django here: the ``reprogate`` CLI and the offline verifier import this module.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final


@dataclass(frozen=True)
class BundleProblem:
    """One thing wrong with a bundle. ``path`` names where: an archive member
    (``traces/a.json``) or a manifest field (``files[3].sha256``)."""

    code: str
    message: str
    path: str | None = None

    def as_dict(self) -> dict[str, str]:
        """The API error format's ``{"code", "message", "path"?}``."""
        data = {"code": self.code, "message": self.message}
        if self.path is not None:
            data["path"] = self.path
        return data

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


_CODES: dict[str, str] = {
    # -- the archive as a whole ---------------------------------------------------
    "archive_format": "The file is not a tar, tar.gz or zip archive, or uses a "
    "feature of the format that bundles may not use.",
    "archive_truncated": "The archive ends early: it was cut off during upload or "
    "when it was written.",
    "archive_unreadable": "The archive is corrupt and cannot be read safely.",
    "archive_trailing_data": "Data follows the end of the archive; nothing may be "
    "hidden after it.",
    "too_many_members": "The archive holds more entries than a bundle may have.",
    "total_too_large": "The archive's files add up to more than a bundle may hold.",
    "compression_ratio": "The archive expands far more than real data does when "
    "unpacked (a decompression bomb).",
    # -- one archive member ---------------------------------------------------------
    "path_absolute": "An entry's path is absolute; bundle paths are relative to "
    "the bundle root.",
    "path_traversal": "An entry's path climbs out of the bundle with '..'.",
    "path_backslash": "An entry's path contains a backslash; bundle paths use '/' "
    "only.",
    "path_empty": "An entry has an empty name or a name that is only '.'.",
    "path_invalid": "An entry's path is not a plain relative path (control "
    "characters, empty or '.' components, not UTF-8, too long).",
    "member_symlink": "The archive contains a symbolic link; bundles hold regular "
    "files only.",
    "member_hardlink": "The archive contains a hard link; bundles hold regular "
    "files only.",
    "member_device": "The archive contains a device node; bundles hold regular "
    "files only.",
    "member_fifo": "The archive contains a named pipe (FIFO) or socket; bundles "
    "hold regular files only.",
    "member_unsupported": "The archive contains an entry of a kind bundles cannot "
    "hold (sparse file, unsupported compression method, volume label ...).",
    "member_encrypted": "An entry of the zip archive is encrypted.",
    "member_overlap": "Two zip entries share the same bytes (a zip bomb technique).",
    "member_too_large": "One file is larger than a bundle file may be.",
    "header_size_mismatch": "The archive's header states a size for an entry that "
    "its data does not have.",
    "path_not_nfc": "A path is not in Unicode normalisation form C (NFC): a letter "
    "and its accent are stored apart.",
    "path_confusable": "Two paths look the same (Unicode look-alike characters, "
    "Unicode TR39 confusables), such as harness/run.sh with a Cyrillic a (U+0430).",
    "name_duplicate": "Two entries have the same path.",
    "name_collision": "Two entries' paths differ only in letter case or Unicode "
    "normalisation, or a file is also used as a directory.",
    # -- manifest.json ----------------------------------------------------------------
    "manifest_missing": "The bundle has no manifest.json at its root.",
    "manifest_too_large": "manifest.json is larger than a manifest may be.",
    "manifest_not_utf8": "manifest.json is not valid UTF-8.",
    "manifest_bom": "manifest.json starts with a byte-order mark; save it as UTF-8 "
    "without BOM.",
    "manifest_invalid_json": "manifest.json is not valid JSON.",
    "manifest_duplicate_key": "A JSON object in manifest.json has the same key "
    "twice, which readers disagree about.",
    "manifest_schema": "A field of manifest.json is missing or does not follow the "
    "reprogate.bundle/v1 schema.",
    "entrypoint_unlisted": "The harness entrypoint is not one of the listed files.",
    "entrypoint_not_harness": "The harness entrypoint is listed, but not with kind "
    "'harness'.",
    "environment_schema": "A structured field of the environment manifest "
    "(accelerators, fabric, pinned) does not follow the bundle format.",
    "claim_scenario_unknown": "A claim refers to a scenario the harness does not "
    "define.",
    # -- manifest against the archive ----------------------------------------------
    "file_missing": "A file listed in the manifest is not in the archive.",
    "file_unlisted": "The archive contains a file the manifest does not list.",
    "size_mismatch": "A file's size differs from the size the manifest lists.",
    "digest_mismatch": "A file's SHA-256 differs from the digest the manifest lists.",
    # -- where it was uploaded -------------------------------------------------------
    "rfp_mismatch": "The manifest names another RFP than the one it was uploaded to.",
    "vendor_mismatch": "The manifest names another vendor than the organisation "
    "that uploaded it.",
    # -- an update bundle (after the award) -----------------------------------------
    "changes_without_supersedes": "The manifest lists changes but names no "
    "accepted bundle it updates (supersedes).",
    "supersedes_required": "The RFP is awarded: a bundle deposited now is an "
    "update and names the accepted bundle it updates (supersedes).",
    "supersedes_unknown": "supersedes names no accepted bundle of the uploading "
    "vendor on this RFP.",
    "update_before_award": "The RFP is not awarded yet: update bundles are "
    "deposited only after the award.",
    "update_not_awarded_vendor": "The RFP is awarded to another vendor: only the "
    "awarded vendor deposits update bundles.",
    "update_not_vendor": "Only the awarded vendor deposits update bundles; the "
    "buyer's baseline bundles update nothing.",
    # -- signature (codes of artifacts.lib.signatures plus the key registration) --
    "signature_missing": "The bundle has neither manifest.json.sig nor "
    "manifest.json.dsse.",
    "signature_too_large": "The signature file is larger than a signature can be.",
    "signature_armor_invalid": "manifest.json.sig is not an SSH signature file.",
    "signature_base64_invalid": "The signature is not valid base64.",
    "signature_magic_invalid": "The signature is not an SSHSIG signature.",
    "signature_version_unsupported": "The signature uses an SSHSIG version this "
    "server does not accept.",
    "signature_malformed": "The signature's structure is broken.",
    "signature_trailing_data": "The signature carries data after its end.",
    "signature_hash_unsupported": "The signature uses a hash other than sha256 or "
    "sha512.",
    "signature_algorithm_legacy": "The signature uses legacy ssh-rsa (SHA-1).",
    "signature_algorithm_mismatch": "The signature algorithm does not fit the key.",
    "signature_namespace_mismatch": "The signature was made for another purpose "
    "(namespace) than 'reprogate-bundle'.",
    "signature_key_not_allowed": "The signing key is not registered for the "
    "uploading organisation.",
    "signature_key_revoked": "The signing key was revoked.",
    "signature_key_expired": "The signing key's validity ended before the upload.",
    "signature_key_not_yet_valid": "The signing key's validity starts after the "
    "upload.",
    "signature_key_unsupported": "The signature was made with a kind of key that "
    "bundles cannot use.",
    "signature_invalid": "The signature does not match manifest.json: the manifest "
    "or the signature was changed after signing.",
    "key_malformed": "The public key inside the signature is malformed.",
    "key_type_unsupported": "The signing key's type is not accepted (Ed25519, "
    "ECDSA P-256/384/521 or RSA).",
    "key_too_small": "The signing key is too small (RSA needs at least 2048 bits).",
    "dsse_malformed": "manifest.json.dsse is not a valid DSSE envelope.",
    "dsse_base64_invalid": "The DSSE envelope holds invalid base64.",
    "dsse_signature_invalid": "No signature in the DSSE envelope verifies with a "
    "registered key.",
    "dsse_payload_type_mismatch": "The DSSE envelope's payload type is not the "
    "bundle manifest type.",
    "dsse_payload_mismatch": "The DSSE envelope's payload is not manifest.json.",
    # -- the report itself -------------------------------------------------------------
    "problems_truncated": "More problems were found than one report lists; fix "
    "these and upload again to see the rest.",
}

PROBLEM_CODES: Final[Mapping[str, str]] = MappingProxyType(_CODES)


def explain(code: str) -> str:
    """The one-line explanation of ``code`` (the code itself if unknown)."""
    return PROBLEM_CODES.get(code, code)


class ProblemList:
    """Problems in the order found, each reported once."""

    def __init__(self) -> None:
        self._items: dict[BundleProblem, None] = {}

    def add(self, code: str, message: str, path: str | None = None) -> None:
        if code not in PROBLEM_CODES:
            raise ValueError(f"unregistered bundle problem code {code!r}")
        self._items.setdefault(BundleProblem(code, message, path))

    def extend(self, problems: Iterable[BundleProblem]) -> None:
        for problem in problems:
            self.add(problem.code, problem.message, problem.path)

    def __iter__(self) -> Iterator[BundleProblem]:
        return iter(list(self._items))

    def __len__(self) -> int:
        return len(self._items)

    def as_list(self) -> list[BundleProblem]:
        return list(self._items)

    @property
    def codes(self) -> set[str]:
        return {problem.code for problem in self._items}
