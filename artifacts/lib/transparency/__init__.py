"""The transparency log's pure core: RFC 9162 Merkle hashing, proof generation and
verification, C2SP signed notes and checkpoints, the log key file.

Nothing here imports Django: the server, the offline ``reprogate evidence verify``
command and the evidence package's verifier share these modules, and the
verifier needs only Python and ``cryptography``.

- ``merkle``: ``leaf_hash``, ``node_hash``, ``root_from_leaf_hashes``,
  ``verify_inclusion``, ``verify_consistency`` (raise ``ProofError``);
- ``tree``: which complete subtrees a proof or a root needs, appending a leaf to
  the list of the tree's peaks (what the server stores);
- ``note``: ``Checkpoint``, ``format_checkpoint``, ``sign_note``,
  ``verifier_key``, ``open_note``, ``open_checkpoint`` (raise ``NoteError``);
- ``keyfile``: the log's Ed25519 private key, generated on first use (0600).
"""
