"""README.txt of an evidence package: how to check it by hand and with the CLI.
Plain text made from the package's own facts (no server time beyond what the
leaves say), so the same deposits give the same README."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from artifacts.lib.evidence.layout import (
    ALLOWED_SIGNERS,
    BLOBS_DIR,
    CHECKPOINT,
    EVIDENCE_JSON,
    LOG_KEY,
    README,
)


@dataclass(frozen=True)
class ReadmeDeposit:
    leaf_index: int
    kind: str
    vendor: str  # the depositing organisation
    rfp: str
    time: str
    archive_sha256: str  # "" if the deposit is no bundle
    documents: tuple[tuple[str, str], ...] = ()  # (path, sha256) of named files


@dataclass(frozen=True)
class ReadmeFile:
    """A file of the package beyond the standard layout, bound by the receipt."""

    name: str
    description: str


def _deposit_lines(deposits: Sequence[ReadmeDeposit]) -> list[str]:
    lines = []
    for d in deposits:
        lines.append(
            f"  - leaf {d.leaf_index}: {d.kind} of {d.vendor} on {d.rfp}, "
            f"deposited {d.time}"
        )
        if d.archive_sha256:
            lines.append(f"    archive: {BLOBS_DIR}{d.archive_sha256}")
        lines += [f"    {path}: {BLOBS_DIR}{sha}" for path, sha in d.documents]
    return lines


STEPS = f"""\
WITH THE REPROGATE COMMAND (Python 3.11+ and `cryptography`, no network)

  reprogate evidence verify THIS-PACKAGE.zip --log-key "$(cat log-key-you-trust)"

  It runs every check below and exits 0 only if all of them pass; each failure
  is named. Get the log's key from the server you trust (GET /api/v1/log/key)
  and give it with --log-key: without it the command can only say the package
  is consistent with the key inside it ({LOG_KEY}).

BY HAND

1. Blob digests. Every file in {BLOBS_DIR} is named by its SHA-256:

     cd blobs && for f in *; do echo "$f  $f"; done | sha256sum -c

2. Leaves. {EVIDENCE_JSON} lists each deposit's "leaf" (base64). Decoded, a
   leaf is the deposit record exactly as the log holds it: canonical JSON
   (UTF-8, sorted keys, no spaces) naming every blob's "sha256" and "size",
   the depositing "organisation", the "rfp", the "time". Check that the blobs
   it names are the files of step 1. The leaf hash is SHA-256(0x00 || leaf):

     python3 -c 'import base64,hashlib,sys; \\
       print(hashlib.sha256(b"\\0"+base64.b64decode(sys.argv[1])).hexdigest())' LEAF

3. Inclusion proofs (RFC 9162 section 2.1.3.2). With i = leaf_index,
   n = tree size of the checkpoint, r = the leaf hash:
     fn = i, sn = n - 1; for each proof hash p (base64) in order:
       if fn is odd or fn == sn: r = SHA-256(0x01 || p || r), then while fn is
         even and fn != 0: fn >>= 1, sn >>= 1
       else: r = SHA-256(0x01 || r || p)
       fn >>= 1, sn >>= 1
     The proof holds if sn == 0 and r equals the checkpoint's root hash.

4. Checkpoint signature. {CHECKPOINT} is a C2SP signed note: the text (origin,
   tree size, base64 root hash, one per line), a blank line, and lines
   "— <name> <base64(4-byte key id || 64-byte Ed25519 signature)>".
   {LOG_KEY} is "<name>+<key id hex>+<base64(0x01 || 32-byte public key)>".
   The signature is Ed25519 over the text (up to and including the newline
   before the blank line), e.g. with Python's cryptography:
     Ed25519PublicKey.from_public_bytes(key[1:]).verify(signature, text)
   Compare {LOG_KEY} with the key the server publishes; the origin of the
   checkpoint must be the "origin" of {EVIDENCE_JSON}.

5. Vendor signature. A bundle deposit's archive holds manifest.json and its
   signature manifest.json.sig (OpenSSH) or manifest.json.dsse (DSSE):

     tar -xzf blobs/ARCHIVE manifest.json manifest.json.sig
     ssh-keygen -Y verify -f {ALLOWED_SIGNERS} -I VENDOR -n reprogate-bundle \\
       -s manifest.json.sig < manifest.json

   ({ALLOWED_SIGNERS} holds the vendor's keys that were valid when the bundle
   was deposited; ssh-keygen checks their validity at the current time, the
   reprogate command at the deposit time.) The manifest's "files" must be the
   deposit leaf's "file" blobs, path for path, digest for digest.

6. Download receipt. {EVIDENCE_JSON} "download" is this download's own log
   entry (an "evidence.downloaded" escrow event) with its inclusion proof in
   the same checkpoint; its leaf's "files" names the SHA-256 of {README},
   {ALLOWED_SIGNERS}, {LOG_KEY} and every other file listed above but the
   blobs, as they were sent.
"""


def readme_text(
    *,
    origin: str,
    heading: str,
    deposits: Sequence[ReadmeDeposit],
    files: Sequence[ReadmeFile] = (),
    steps: str = "",
) -> str:
    """README.txt: ``heading`` says what the package is of ("Bundle <id>");
    ``files`` and ``steps`` (numbered on from 7) describe what a higher layer
    adds to the standard layout."""
    head = [
        "REPROGATE EVIDENCE PACKAGE",
        "",
        f"{heading}, escrowed in the transparency log {origin}.",
        "Deposits in this package:",
        *_deposit_lines(deposits),
        "",
        "Files:",
        f"  {EVIDENCE_JSON:22} the deposits' log leaves and inclusion proofs",
        f"  {CHECKPOINT:22} the signed checkpoint the proofs lead to",
        f"  {LOG_KEY:22} the log's note verifier key",
        f"  {BLOBS_DIR + '<sha256>':22} every blob the deposits name",
        f"  {ALLOWED_SIGNERS:22} the vendor keys valid at deposit time",
        *(f"  {f.name:22} {f.description}" for f in files),
        f"  {README:22} this file",
        "",
    ]
    text = "\n".join(head) + "\n" + STEPS
    return text + ("\n" + steps.rstrip("\n") + "\n" if steps else "")
