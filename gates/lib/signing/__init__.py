"""Signing of the benchmark reports and acceptance certificates, with no Django
(docs/reports.md): the installation's report-signing certificate (``pki``), PAdES
signatures of the PDFs (``pades``) and the in-toto Statements in DSSE envelopes
(``statement``). Only ``cryptography``, ``asn1crypto``, pyHanko and the
Django-free ``artifacts.lib`` are imported, so an outsider can run the same code.
"""

from __future__ import annotations
