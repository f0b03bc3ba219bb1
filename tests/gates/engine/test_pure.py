"""The evaluation engine is usable with nothing but Python and numpy: the
offline ``reprogate gate evaluate`` imports it without Django."""

from __future__ import annotations

from tests.django_free import web_modules_loaded_by

IMPORTS = """
import gates.lib.engine
from gates.lib.engine import documents, evaluate, reasons, statistics, validate
"""


def test_the_engine_imports_no_django() -> None:
    assert web_modules_loaded_by(IMPORTS) == "none"
