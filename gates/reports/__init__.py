"""Signed reports' rendering: the report's facts read from the database
(``content``), the criterion charts as vector SVG (``charts``) and the PDF made
from Django templates by WeasyPrint (``pdf``). Signing is ``gates.signing``'s."""
