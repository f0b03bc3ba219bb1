"""Models of the artifacts app, one module per area."""

from artifacts.models.bundles import Blob, Bundle, BundleFile
from artifacts.models.keys import SigningKey

__all__ = ["Blob", "Bundle", "BundleFile", "SigningKey"]
