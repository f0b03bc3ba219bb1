"""Models of the artifacts app, one module per area."""

from artifacts.models.bundles import Blob, Bundle, BundleFile
from artifacts.models.escrow import Deposit, DepositBlob, EscrowEvent, LogVisit
from artifacts.models.fixity import FixityFinding, FixityRun
from artifacts.models.keys import SigningKey
from artifacts.models.log import Checkpoint, LogEntry, LogNode, LogState
from artifacts.models.release import RELEASE_TRANSITIONS, Release, ReleaseStep

__all__ = [
    "RELEASE_TRANSITIONS",
    "Blob",
    "Bundle",
    "BundleFile",
    "Checkpoint",
    "Deposit",
    "DepositBlob",
    "EscrowEvent",
    "FixityFinding",
    "FixityRun",
    "LogEntry",
    "LogNode",
    "LogState",
    "LogVisit",
    "Release",
    "ReleaseStep",
    "SigningKey",
]
