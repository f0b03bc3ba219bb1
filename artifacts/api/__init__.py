"""The artifacts API under ``/api/v1/``: signing keys (``keys``), bundles
(``bundles``), the transparency log (``log``), escrow deposits and evidence
packages (``escrow``), escrow releases (``release``); ``urls`` lists them all."""
