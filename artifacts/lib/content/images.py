"""``container_image``: an OCI image layout inside the bundle, or a reference to
an image pinned by its digest.

- Layout: a listed ``oci-layout`` file (``{"imageLayoutVersion": "1.0.0"}``) makes
  its folder a layout root. Its ``index.json`` must list manifests; every
  descriptor's digest (index -> manifests -> config and layers, nested indexes
  too, at most ``MAX_NESTING`` levels) must be a listed file
  ``<root>/blobs/sha256/<hex>`` whose listed SHA-256 and size are the
  descriptor's. Ingest has checked every listed file's bytes against its listed
  SHA-256, so a match here verifies the blob's digest.
- Reference: any other ``.json`` file of the kind,
  ``{"image": "registry/name[:tag]", "digest": "sha256:<64 hex>"}`` (or the
  digest in the image as ``name@sha256:…``). A tag without a digest is
  ``image_not_pinned``: a tag can be moved, a digest cannot.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from artifacts.lib.content.common import (
    MAX_JSON_BYTES,
    KindResult,
    Reader,
    load_json,
    read_capped,
)
from artifacts.lib.manifest import ManifestFile

DIGEST_RE: Final = re.compile(r"sha256:([0-9a-f]{64})")
NAME_RE: Final = re.compile(
    r"[a-z0-9.-]+(?::[0-9]+)?(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)+"
    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?"
)
MAX_NESTING: Final = 4
MANIFEST_TYPES: Final = frozenset(
    {
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.docker.distribution.manifest.v2+json",
    }
)
INDEX_TYPES: Final = frozenset(
    {
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
    }
)


def _json(result: KindResult, file: ManifestFile | None, read: Reader) -> Any:
    if file is None:
        return None
    data = read_capped(result, file, read, MAX_JSON_BYTES)
    try:
        return load_json(data) if data is not None else None
    except ValueError:
        return None


def _under(path: str, root: str) -> bool:
    return not root or path == root or path.startswith(root + "/")


class _Layout:
    def __init__(
        self, root: str, listed: Mapping[str, ManifestFile], read: Reader, r: KindResult
    ) -> None:
        self.root, self.listed, self.read, self.result = root, listed, read, r
        self.verified: set[str] = set()

    def path(self, name: str) -> str:
        return posixpath.join(self.root, name) if self.root else name

    def blob(self, descriptor: Any, where: str) -> ManifestFile | None:
        """The listed blob a descriptor names, or None with a problem."""
        digest = descriptor.get("digest") if isinstance(descriptor, dict) else None
        match = DIGEST_RE.fullmatch(digest) if isinstance(digest, str) else None
        if match is None:
            message = f"{where} has no sha256:<64 hex> digest."
            self.result.problem("oci_index_invalid", message, self.path("index.json"))
            return None
        path = self.path(f"blobs/sha256/{match.group(1)}")
        file = self.listed.get(path)
        if file is None:
            message = f"{where} names {digest}; {path} is not in the bundle."
            self.result.problem("oci_blob_missing", message, path)
            return None
        size = descriptor.get("size")
        if file.sha256 != match.group(1) or (
            isinstance(size, int) and size != file.size
        ):
            message = (
                f"{where} names {digest} of {size} bytes; the file is listed with "
                f"SHA-256 {file.sha256} and {file.size} bytes."
            )
            self.result.problem("oci_digest_mismatch", message, path)
            return None
        self.verified.add(path)
        return file

    def walk(self, descriptors: Sequence[Any], where: str, depth: int) -> int:
        """Check descriptors (and what manifests and indexes name); the number of
        image manifests found."""
        found = 0
        for index, descriptor in enumerate(descriptors):
            at = f"{where}[{index}]"
            file = self.blob(descriptor, at)
            media = descriptor.get("mediaType") if file is not None else None
            if file is None or depth >= MAX_NESTING:
                continue
            if media in MANIFEST_TYPES:
                found += 1
                document = _json(self.result, file, self.read)
                if isinstance(document, dict):
                    parts = [document.get("config"), *(document.get("layers") or [])]
                    self.walk([p for p in parts if p is not None], f"{at}.blobs", 99)
            elif media in INDEX_TYPES:
                document = _json(self.result, file, self.read)
                nested = (
                    document.get("manifests") if isinstance(document, dict) else None
                )
                found += self.walk(nested or [], f"{at}.manifests", depth + 1)
            else:
                found += 1  # an artifact manifest of another type: present, named
        return found

    def check(self) -> None:
        marker = _json(self.result, self.listed[self.path("oci-layout")], self.read)
        if not isinstance(marker, dict) or not isinstance(
            marker.get("imageLayoutVersion"), str
        ):
            message = 'oci-layout is not {"imageLayoutVersion": "1.0.0"}.'
            self.result.problem("oci_layout_invalid", message, self.path("oci-layout"))
            return
        index = _json(self.result, self.listed.get(self.path("index.json")), self.read)
        manifests = index.get("manifests") if isinstance(index, dict) else None
        if not isinstance(manifests, list) or not manifests:
            message = "index.json is missing, not JSON or lists no manifests."
            self.result.problem("oci_index_invalid", message, self.path("index.json"))
            return
        before = len(self.result.problems)
        count = self.walk(manifests, "index.json manifests", 0)
        if len(self.result.problems) == before:
            self.result.items.append(
                {
                    "source": "oci-layout",
                    "path": self.root or ".",
                    "manifests": count,
                    "blobs_verified": len(self.verified),
                }
            )


def _reference(result: KindResult, file: ManifestFile, read: Reader) -> None:
    data = read_capped(result, file, read, MAX_JSON_BYTES)
    if data is None:
        return
    try:
        document = load_json(data)
    except ValueError:
        document = None
    image = document.get("image") if isinstance(document, dict) else None
    if not isinstance(image, str) or not image:
        message = 'Not {"image": "registry/name", "digest": "sha256:<64 hex>"}.'
        result.problem("image_reference_invalid", message, file.path)
        return
    assert isinstance(document, dict)  # noqa: S101 - image was found in it
    name, _, pinned = image.partition("@")
    digest = document.get("digest", pinned or None)
    if digest is None:
        message = f"{image} names no digest: pin it with sha256:<64 hex>."
        result.problem("image_not_pinned", message, file.path)
    elif not (isinstance(digest, str) and DIGEST_RE.fullmatch(digest)):
        message = f"The digest {digest!r} is not sha256:<64 hex>."
        result.problem("image_reference_invalid", message, file.path)
    elif (pinned and pinned != digest) or not NAME_RE.fullmatch(name):
        message = f"{image!r} is not registry/name[:tag] with the digest given."
        result.problem("image_reference_invalid", message, file.path)
    else:
        item = {"source": "reference", "path": file.path, "image": name}
        result.items.append({**item, "digest": digest})


def check_container_images(
    files: Sequence[ManifestFile], listed: Mapping[str, ManifestFile], read: Reader
) -> dict[str, Any]:
    """``files``: the bundle's files of kind ``container_image``; ``listed``: every
    listed file by path (blobs may be listed with another kind)."""
    result = KindResult("container_image", files=len(files))
    roots = sorted(
        {
            posixpath.dirname(f.path)
            for f in files
            if posixpath.basename(f.path) == "oci-layout"
        }
    )
    for root in roots:
        _Layout(root, listed, read, result).check()
    for file in files:
        if any(_under(file.path, root) for root in roots):
            continue
        if file.path.lower().endswith(".json"):
            _reference(result, file, read)
        else:
            message = "Neither in an OCI image layout nor an image reference (.json)."
            result.problem("container_image_unrecognised", message, file.path)
    return result.as_dict()
