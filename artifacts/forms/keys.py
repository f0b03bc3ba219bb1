from __future__ import annotations

from django import forms

from accounts.forms.users import UtcDateTimeInput
from artifacts.lib.signatures.sshkeys import MAX_KEY_LINE


class SigningKeyRegisterForm(forms.Form):
    public_key = forms.CharField(
        label="Public key",
        max_length=MAX_KEY_LINE,
        strip=True,
        widget=forms.Textarea(
            attrs={"rows": 3, "placeholder": "ssh-ed25519 AAAAC3Nz… ci@acme-flash"}
        ),
        help_text="Paste one line of your .pub file: Ed25519, ECDSA P-256/384/521 "
        "or RSA of at least 2048 bits.",
    )
    valid_until = forms.DateTimeField(
        label="Valid until",
        required=False,
        widget=UtcDateTimeInput(),
        help_text="UTC, as YYYY-MM-DD HH:MM; empty for no end. Bundles uploaded "
        "later are refused.",
    )


class BundleUploadForm(forms.Form):
    file = forms.FileField(
        label="Bundle archive",
        widget=forms.ClearableFileInput(
            attrs={"accept": ".tar,.tar.gz,.tgz,.zip,application/gzip,application/zip"}
        ),
        help_text="A .tar.gz, .tgz, .tar or .zip built by `reprogate bundle build`, "
        "with manifest.json and its signature at the root.",
    )
