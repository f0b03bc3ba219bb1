"""Does a restored installation's keys match its database? (``manage.py
backup_check``, docs/operations.md "Backup and restore").

Read only, and never makes a key: the log's key must have signed the latest
checkpoint (and the log's stored tree must still give that checkpoint's root);
the report signer must be the certificate of the latest signed report, and the
statement key must verify that report's statement (read from storage, so the
media or bucket is checked too)."""

from __future__ import annotations

from dataclasses import dataclass, field

from artifacts.conf import log_key_path
from artifacts.lib.signatures.statement import StatementError, public_key_pem
from artifacts.lib.transparency import note
from artifacts.lib.transparency.keyfile import LogKeyError, load_private_key
from artifacts.models import Checkpoint
from artifacts.selectors.log import LogIntegrityError, LogRangeError, log_root
from artifacts.storage.blobs import blob_open
from gates.conf import report_settings
from gates.lib.signing.pki import ReportKeyError, signer_load, signer_load_or_create
from gates.lib.signing.statement import statement_open
from gates.models import Report


@dataclass
class BackupCheck:
    checked: list[str] = field(default_factory=list)  # what matched, one line each
    problems: list[str] = field(default_factory=list)


def _log(result: BackupCheck) -> None:
    latest = Checkpoint.objects.order_by("-size").first()
    if latest is None:
        result.checked.append("no checkpoint yet: the log's key is made on first use")
        return
    try:
        key = load_private_key(log_key_path(), create=False)
        vkey = note.verifier_key(latest.origin, key.public_key())
        if vkey != latest.verifier_key:
            raise note.NoteError(f"it is not the key {latest.verifier_key}")
        note.open_checkpoint(latest.note, vkey)
        if log_root(latest.size) != bytes(latest.root_hash):
            raise LogIntegrityError("the stored log gives another root at that size")
    except (LogKeyError, note.NoteError) as error:
        result.problems.append(
            f"the log key {log_key_path()} did not sign checkpoint {latest.size}: "
            f"{error}"
        )
    except (LogIntegrityError, LogRangeError) as error:
        result.problems.append(
            f"the log does not hold checkpoint {latest.size}: {error}"
        )
    else:
        result.checked.append(
            f"the log key signed the latest checkpoint (size {latest.size})"
        )


def _signer_fingerprint() -> str:
    conf = report_settings()
    if conf.signer is not None:
        signer = signer_load(conf.signer, conf.signer_key, conf.signer_password)
        return signer.fingerprint
    return signer_load_or_create(conf.keys_dir, create=False).fingerprint


def _reports(result: BackupCheck) -> None:
    ready = Report.objects.filter(status=Report.Status.READY)
    ready = ready.select_related("statement_blob")
    latest = ready.order_by("-finished_at", "-id").first()
    if latest is None:
        result.checked.append(
            "no signed report yet: the report keys are made on first use"
        )
        return
    try:
        fingerprint = _signer_fingerprint()
        if fingerprint != latest.signer_fingerprint:
            raise ReportKeyError(
                f"its certificate is {fingerprint}, report {latest.public_id} was "
                f"signed by {latest.signer_fingerprint}"
            )
    except ReportKeyError as error:
        result.problems.append(f"the report signer is not the reports': {error}")
    else:
        result.checked.append(f"the report signer signed report {latest.public_id}")
    path = report_settings().statement_key_path
    try:
        public = public_key_pem(load_private_key(path, create=False))
        if latest.statement_blob is None:
            raise StatementError("the report has no statement")
        with blob_open(latest.statement_blob) as handle:
            statement_open(handle.read(), public)
    except (LogKeyError, StatementError, OSError) as error:
        result.problems.append(
            f"the statement key {path} does not verify report {latest.public_id}'s "
            f"statement: {error}"
        )
    else:
        result.checked.append(
            f"the statement key verifies report {latest.public_id}'s statement"
        )


def backup_check() -> BackupCheck:
    result = BackupCheck()
    _log(result)
    _reports(result)
    return result
