"""Escrow helpers: settings, leaf records, who sees deposits, and the reads the
deposit pages need. Services live in ``artifacts.services.escrow``."""
