"""Fixity checks of escrow (``report`` and one module per area) and their runs
(``run``)."""
