"""Signed benchmark reports inside a bundle, checked at ingest with no Django.

- ``pades``: a report PDF's PAdES signatures validated with pyHanko, in this
  process: integrity, signer certificate, time stamp, coverage of the whole
  document, trust in the installation's roots. Hostile input is expected: every
  failure becomes a named problem.
- ``bounded``: the same check in a child process with a wall-clock limit and
  memory and CPU limits, so a crafted PDF cannot hang or exhaust the server.
- ``statement``: an in-toto Statement in a DSSE envelope beside the PDF
  (``<pdf>.intoto.json`` or ``<pdf>.dsse``) whose subject is the PDF's SHA-256,
  signed with one of the vendor's registered keys; its predicate says what the
  report claims.
"""

from __future__ import annotations
