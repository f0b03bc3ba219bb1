"""Signature formats accepted for bundle manifests, written with ``cryptography``.

No Django here: the offline evidence verifier and the ``reprogate`` CLI reuse it.

- ``sshkeys``: OpenSSH public key lines and private key files, fingerprints.
- ``sshsig``: OpenSSH SSHSIG signatures (``ssh-keygen -Y sign`` / ``-Y verify``).
- ``dsse``: DSSE envelopes whose payload is the manifest.

Every refusal raises ``SignatureError`` with a stable problem ``code``.
"""

from __future__ import annotations

NAMESPACE = "reprogate-bundle"


class SignatureError(Exception):
    """A key, signature or envelope was refused; ``code`` names the reason."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __repr__(self) -> str:
        return f"SignatureError({self.code!r}, {self.message!r})"
