"""Models of the artifacts app, one module per area."""

from artifacts.models.bundles import Blob, Bundle, BundleFile
from artifacts.models.escrow import Deposit, DepositBlob, EscrowEvent, LogVisit
from artifacts.models.keys import SigningKey
from artifacts.models.log import Checkpoint, LogEntry, LogNode, LogState

__all__ = [
    "Blob",
    "Bundle",
    "BundleFile",
    "Checkpoint",
    "Deposit",
    "DepositBlob",
    "EscrowEvent",
    "LogEntry",
    "LogNode",
    "LogState",
    "LogVisit",
    "SigningKey",
]
