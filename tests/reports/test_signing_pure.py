"""The signing library is usable without Django: the offline evidence verifier
checks report signatures and statements with it."""

from __future__ import annotations

from tests.django_free import web_modules_loaded_by

IMPORTS = """
import gates.lib.signing
from gates.lib.signing import pades, pki, statement
"""


def test_the_signing_library_imports_no_django() -> None:
    assert web_modules_loaded_by(IMPORTS) == "none"


def test_the_check_sees_django_when_it_is_loaded() -> None:
    """The check can fail: an import of Django is reported."""
    assert web_modules_loaded_by(IMPORTS + "import django.conf\n") != "none"
