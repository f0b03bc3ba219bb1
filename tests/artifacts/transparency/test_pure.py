"""The log's core is usable with nothing but Python and ``cryptography``: the
offline verifier (``reprogate evidence verify``) imports it without Django."""

from __future__ import annotations

from tests.django_free import web_modules_loaded_by

IMPORTS = "from artifacts.lib.transparency import keyfile, merkle, note, tree"


def test_the_transparency_package_imports_no_django() -> None:
    assert web_modules_loaded_by(IMPORTS) == "none"
