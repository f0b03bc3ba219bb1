"""``reprogate bundle verify FILE --allowed-signers F``: the server's checks,
offline.

The archive is read with ``artifacts.lib.archive`` (never extracted), the manifest
validated and compared with the archive by ``artifacts.lib.manifest.inspect_bundle``,
and the signature checked against an ``ssh-keygen`` allowed_signers file, with
the rules of ``ssh-keygen -Y verify -f F -I PRINCIPAL -n reprogate-bundle``
(openssh-portable sshsig.c, ssh-keygen(1) ALLOWED SIGNERS):

- ``principals [options] keytype base64 [comment]``; ``principals`` and
  ``namespaces`` are pattern-lists (``*``, ``?``, ``!negation``);
- options ``namespaces="…"``, ``valid-after="…"``, ``valid-before="…"`` (quoted
  ``YYYYMMDD[HHMM[SS]][Z]``, local time unless ``Z``) and ``cert-authority``;
  an unknown option or a malformed line makes ``ssh-keygen`` ignore the line,
  and so does this reader (with a warning). Certificate authorities are not
  supported: bundles are signed with plain keys.

The principal is ``--principal`` or, by default, the manifest's ``vendor`` (the
server exports each organisation's keys under its slug). Keys are checked at
``--at`` (default now), as ``ssh-keygen`` checks them at the current time.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from artifacts.lib.archive import DEFAULT_LIMITS, ArchiveLimits
from artifacts.lib.manifest import (
    DSSE_NAME,
    KEEP,
    SIGNATURE_NAME,
    BundleInspection,
    Manifest,
    inspect_bundle,
)
from artifacts.lib.manifest.vocabulary import (
    ENVIRONMENT_MANIFEST,
    ENVIRONMENT_MAX_BYTES,
    environment_manifest_path,
    environment_problems,
)
from artifacts.lib.problems import BundleProblem
from artifacts.lib.signatures import NAMESPACE, SignatureError, dsse, sshsig
from artifacts.lib.signatures.sshkeys import (
    KEY_TYPES,
    SshPublicKey,
    parse_public_key_line,
)

MAX_ALLOWED_SIGNERS_BYTES: Final = 4 * 1024 * 1024
# The server stores bundle paths of at most 500 characters (BundleFile.path).
MAX_STORED_PATH: Final = 500
TIME_RE: Final = re.compile(r"(\d{8}|\d{12}|\d{14})(Z?)")
WHITESPACE: Final = " \t"


class AllowedSignersError(Exception):
    """The allowed_signers file cannot be read at all."""


# --- allowed_signers --------------------------------------------------------------


def match_pattern(value: str, pattern: str) -> bool:
    """OpenSSH ``match_pattern``: ``*`` and ``?`` wildcards, nothing else."""
    regex = "".join(
        ".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern
    )
    return re.fullmatch(regex, value, re.DOTALL) is not None


def match_pattern_list(value: str, patterns: str) -> bool:
    """OpenSSH ``match_pattern_list``: a match unless a ``!pattern`` matches."""
    matched = False
    for pattern in patterns.split(","):
        negated = pattern.startswith("!")
        if match_pattern(value, pattern[1:] if negated else pattern):
            if negated:
                return False
            matched = True
    return matched


@dataclass(frozen=True)
class AllowedSigner:
    line: int
    principals: str  # a pattern-list
    key: SshPublicKey
    namespaces: str | None = None  # a pattern-list; None allows every namespace
    valid_after: datetime | None = None
    valid_before: datetime | None = None

    def allows(self, principal: str) -> bool:
        return match_pattern_list(principal, self.principals)

    def allows_namespace(self, namespace: str) -> bool:
        return self.namespaces is None or match_pattern_list(namespace, self.namespaces)

    def not_yet_valid(self, at: datetime) -> bool:
        return self.valid_after is not None and at < self.valid_after

    def expired(self, at: datetime) -> bool:
        return self.valid_before is not None and at > self.valid_before


@dataclass
class AllowedSigners:
    signers: list[AllowedSigner] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


class _LineError(Exception):
    pass


def _take_token(text: str) -> tuple[str, str]:
    """The next field: up to unquoted whitespace (``\\"`` escapes a quote)."""
    quoted, index = False, 0
    while index < len(text):
        char = text[index]
        if char == "\\" and text[index + 1 : index + 2] == '"':
            index += 2
            continue
        if char == '"':
            quoted = not quoted
        elif char in WHITESPACE and not quoted:
            break
        index += 1
    if quoted:
        raise _LineError("a quote is not closed")
    return text[:index], text[index:].lstrip(WHITESPACE)


def _principals(text: str) -> tuple[str, str]:
    if text.startswith('"'):
        end = text.find('"', 1)
        if end < 0:
            raise _LineError("the quoted principals are not closed")
        return text[1:end], text[end + 1 :].lstrip(WHITESPACE)
    return _take_token(text)


def parse_time(value: str) -> datetime:
    """``YYYYMMDD``, ``YYYYMMDDHHMM`` or ``YYYYMMDDHHMMSS``, UTC if ``Z`` follows,
    else local time (OpenSSH ``parse_absolute_time``)."""
    match = TIME_RE.fullmatch(value)
    if match is None:
        raise _LineError(f"time {value!r} is not YYYYMMDD[HHMM[SS]][Z]")
    digits = match.group(1).ljust(14, "0")
    try:
        moment = datetime.strptime(digits, "%Y%m%d%H%M%S")  # noqa: DTZ007 - zone below
    except ValueError:
        raise _LineError(f"time {value!r} is not a valid date") from None
    return moment.replace(tzinfo=UTC) if match.group(2) else moment.astimezone(UTC)


def _split_options(text: str) -> list[str]:
    options, current, quoted = [], "", False
    for char in text:
        if char == '"':
            quoted = not quoted
        if char == "," and not quoted:
            options.append(current)
            current = ""
        else:
            current += char
    return [*options, current]


def _option_value(option: str, name: str) -> str:
    value = option[len(name) + 1 :]
    if len(value) < 2 or not value.startswith('"') or not value.endswith('"'):
        raise _LineError(f"the value of {name} must be in double quotes")
    return value[1:-1]


def _apply_options(text: str, fields: dict[str, Any]) -> None:
    for option in _split_options(text):
        name = option.split("=", 1)[0].lower()
        if name == "cert-authority":
            raise _LineError("certificate authorities are not supported")
        if name == "namespaces":
            fields["namespaces"] = _option_value(option, name)
        elif name in ("valid-after", "valid-before"):
            moment = parse_time(_option_value(option, name))
            fields[name.replace("-", "_")] = moment
        else:
            raise _LineError(f"unknown option {option[:40]!r}")


def _parse_line(number: int, line: str) -> AllowedSigner:
    principals, rest = _principals(line)
    if not principals or not rest:
        raise _LineError("expected: principals [options] key")
    fields: dict[str, Any] = {}
    if rest.split(None, 1)[0] not in KEY_TYPES:
        options, rest = _take_token(rest)
        _apply_options(options, fields)
    try:
        key = parse_public_key_line(rest)
    except SignatureError as error:
        raise _LineError(error.message) from None
    return AllowedSigner(number, principals, key, **fields)


def parse_allowed_signers(text: str) -> AllowedSigners:
    """Every usable line; the others become ``warnings`` (as ssh-keygen skips them)."""
    result = AllowedSigners()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip(WHITESPACE + "\r")
        if not line or line.startswith("#"):
            continue
        try:
            result.signers.append(_parse_line(number, line))
        except _LineError as error:
            result.warnings.append(f"line {number}: {error} (line ignored)")
    return result


def read_allowed_signers(path: Path) -> AllowedSigners:
    try:
        if path.stat().st_size > MAX_ALLOWED_SIGNERS_BYTES:
            raise AllowedSignersError(
                f"{path} is too large for an allowed_signers file"
            )
        text = path.read_text("utf-8")
    except OSError as error:
        raise AllowedSignersError(f"cannot read {path}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise AllowedSignersError(f"{path} is not UTF-8 text") from None
    return parse_allowed_signers(text)


# --- signatures against the policy ------------------------------------------------


def _problem(code: str, message: str, path: str) -> list[BundleProblem]:
    return [BundleProblem(code, message, path)]


def _policy_problems(
    entries: list[AllowedSigner], key: SshPublicKey, principal: str, at: datetime
) -> list[BundleProblem]:
    """Why no allowed_signers line lets ``key`` sign for ``principal`` at ``at``."""
    fingerprint = key.fingerprint
    mine = [e for e in entries if e.key.blob == key.blob]
    if not mine:
        message = f"The signing key {fingerprint} is not in the allowed signers file."
        return _problem("signature_key_not_allowed", message, SIGNATURE_NAME)
    mine = [e for e in mine if e.allows(principal)]
    if not mine:
        message = f"The signing key {fingerprint} is not listed for {principal!r}."
        return _problem("signature_key_not_allowed", message, SIGNATURE_NAME)
    mine = [e for e in mine if e.allows_namespace(NAMESPACE)]
    if not mine:
        message = f"The signing key {fingerprint} may not sign for {NAMESPACE!r}."
        return _problem("signature_key_not_allowed", message, SIGNATURE_NAME)
    if any(not e.not_yet_valid(at) and not e.expired(at) for e in mine):
        return []
    if all(e.not_yet_valid(at) for e in mine):
        message = f"The signing key {fingerprint} is valid only after {at:%Y-%m-%d}."
        return _problem("signature_key_not_yet_valid", message, SIGNATURE_NAME)
    message = f"The signing key {fingerprint} expired before {at:%Y-%m-%d %H:%M}Z."
    return _problem("signature_key_expired", message, SIGNATURE_NAME)


def sshsig_problems(
    manifest: bytes,
    signature: bytes,
    signers: Iterable[AllowedSigner],
    *,
    principal: str,
    at: datetime,
) -> tuple[list[BundleProblem], str | None]:
    """Problems of ``manifest.json.sig`` and the signer's fingerprint. The
    signature is checked against its own key first, so a tampered manifest is
    reported even when the key is not allowed."""
    try:
        parsed = sshsig.parse(signature)
        sshsig.verify(manifest, parsed, public_keys=[parsed.public_key])
    except SignatureError as error:
        return _problem(error.code, error.message, SIGNATURE_NAME), None
    policy = _policy_problems(list(signers), parsed.public_key, principal, at)
    return policy, parsed.fingerprint


def dsse_problems(
    manifest: bytes,
    envelope: bytes,
    signers: Iterable[AllowedSigner],
    *,
    principal: str,
    at: datetime,
) -> tuple[list[BundleProblem], str | None]:
    keys = [
        s.key
        for s in signers
        if s.allows(principal)
        and s.allows_namespace(NAMESPACE)
        and not s.not_yet_valid(at)
        and not s.expired(at)
    ]
    if not keys:
        message = f"No key in the allowed signers file is valid for {principal!r} now."
        return _problem("signature_key_not_allowed", message, DSSE_NAME), None
    try:
        verified = dsse.verify(envelope, public_keys=keys, expected_payload=manifest)
    except SignatureError as error:
        return _problem(error.code, error.message, DSSE_NAME), None
    return [], verified.public_key.fingerprint


# --- the whole bundle -------------------------------------------------------------


@dataclass(frozen=True)
class VerifyReport:
    path: Path
    sha256: str
    size: int
    problems: tuple[BundleProblem, ...]
    manifest: Manifest | None
    principal: str | None
    fingerprints: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


def _file_digest(path: Path) -> tuple[int, str]:
    hasher, size = hashlib.sha256(), 0
    with path.open("rb") as handle:
        while chunk := handle.read(1024 * 1024):
            hasher.update(chunk)
            size += len(chunk)
    return size, hasher.hexdigest()


def signature_problems(
    inspection: BundleInspection,
    signers: AllowedSigners,
    *,
    principal: str | None,
    at: datetime,
) -> tuple[list[BundleProblem], list[str]]:
    """Every signature the bundle carries (SSHSIG, DSSE or both) must verify, as
    on the server; the problems and the fingerprints of the keys that signed."""
    manifest = inspection.manifest_bytes
    present = [
        (data, check)
        for data, check in (
            (inspection.signature, sshsig_problems),
            (inspection.dsse, dsse_problems),
        )
        if data is not None
    ]
    if manifest is None or not present:
        return [], []  # inspect_bundle reported why
    if principal is None:
        message = "The manifest names no vendor; give --principal."
        return [BundleProblem("signature_key_not_allowed", message)], []
    problems: list[BundleProblem] = []
    fingerprints: list[str] = []
    for data, check in present:
        found, fingerprint = check(
            manifest, data, signers.signers, principal=principal, at=at
        )
        problems += found
        fingerprints += [fingerprint] if fingerprint and not found else []
    return problems, fingerprints


def verify_bundle(
    path: Path,
    signers: AllowedSigners,
    *,
    principal: str | None = None,
    rfp: str | None = None,
    at: datetime | None = None,
    limits: ArchiveLimits = DEFAULT_LIMITS,
) -> VerifyReport:
    """Every problem of the bundle at ``path``, as the server would find them."""
    keep = {**KEEP, ENVIRONMENT_MANIFEST: ENVIRONMENT_MAX_BYTES}
    inspection = inspect_bundle(path, limits, rfp=rfp, vendor=principal, keep=keep)
    result = inspection.result
    principal = principal or (result.vendor if result is not None else None)
    signed, fingerprints = signature_problems(
        inspection, signers, principal=principal, at=at or datetime.now(UTC)
    )
    problems = [
        *inspection.problems,
        *signed,
        *stored_path_problems(inspection.manifest),
        *_environment_problems(inspection),
    ]
    size, sha256 = _file_digest(path)
    return VerifyReport(
        path,
        sha256,
        size,
        tuple(dict.fromkeys(problems)),
        inspection.manifest,
        principal,
        tuple(fingerprints),
    )


def _environment_problems(inspection: BundleInspection) -> list[BundleProblem]:
    """The environment manifest's structured fields, checked as the server
    does, when it is ``environment/manifest.json`` (the usual place)."""
    files = inspection.result.files if inspection.result else ()
    path = environment_manifest_path([(f.path, f.kind) for f in files])
    data = inspection.archive.kept.get(ENVIRONMENT_MANIFEST)
    if path != ENVIRONMENT_MANIFEST or data is None:
        return []
    found = environment_problems(path, data)
    return [BundleProblem("environment_schema", msg, at) for at, msg in found]


def stored_path_problems(manifest: Manifest | None) -> list[BundleProblem]:
    """Paths the server cannot store, as its ingest reports them."""
    return [
        BundleProblem(
            "path_invalid",
            f"The path is over {MAX_STORED_PATH} characters, the most a stored "
            "bundle file may have.",
            item.path[:200],
        )
        for item in (manifest.files if manifest else ())
        if len(item.path) > MAX_STORED_PATH
    ]


def render(report: VerifyReport) -> str:
    """The text ``bundle verify`` prints."""
    if not report.ok:
        count = len(report.problems)
        lines = [f"INVALID {report.path}: {count} problem{'s' * (count != 1)}"]
        lines += [
            f"  {p.code}  {p.path}: {p.message}"
            if p.path
            else f"  {p.code}  {p.message}"
            for p in report.problems
        ]
        return "\n".join(lines)
    manifest = report.manifest
    if manifest is None:  # cannot happen: no problems means the manifest parsed
        return f"OK {report.path}"
    return "\n".join(
        [
            f"OK {report.path}",
            f"  sha256    {report.sha256} ({report.size} bytes)",
            f"  rfp       {manifest.rfp}",
            f"  vendor    {manifest.vendor}",
            f"  created   {manifest.created:%Y-%m-%dT%H:%M:%SZ}",
            f"  files     {len(manifest.files)}",
            f"  signed by {', '.join(report.fingerprints)} as {report.principal}",
        ]
    )
