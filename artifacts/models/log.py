"""The transparency log's tables (docs/architecture.md).

- ``LogEntry``: one leaf, byte-exact, at its index (0, 1, 2, … with no gap);
- ``LogNode``: the hash of every complete subtree, stored when an append completes
  it (``artifacts.lib.transparency.tree``), so a proof reads O(log n) rows;
- ``LogState``: the single row appends lock (size and peaks of the tree);
- ``Checkpoint``: every signed checkpoint, as the signed note text.

Entries, nodes and checkpoints are append-only: ``save()`` on a stored row,
``delete()`` and queryset ``update()``/``delete()`` raise. Only
``artifacts.services.transparency`` writes them.
"""

from __future__ import annotations

from typing import Any, ClassVar

from django.db import models
from django.db.models import Q
from django.db.models.functions import Length
from django.db.models.lookups import Exact
from django.utils import timezone

from artifacts.lib.transparency.merkle import HASH_SIZE


class LogIsAppendOnly(Exception):
    pass


class AppendOnlyQuerySet(models.QuerySet[Any]):
    def update(self, **kwargs: Any) -> int:
        raise LogIsAppendOnly("The transparency log is append-only.")

    def delete(self) -> tuple[int, dict[str, int]]:
        raise LogIsAppendOnly("The transparency log is append-only.")


class AppendOnlyModel(models.Model):
    objects: ClassVar[Any] = AppendOnlyQuerySet.as_manager()

    class Meta:
        abstract = True

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise LogIsAppendOnly(f"A stored {type(self).__name__} cannot change.")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise LogIsAppendOnly(f"A {type(self).__name__} cannot be deleted.")


def _hash_size(field: str, name: str) -> models.CheckConstraint:
    return models.CheckConstraint(condition=Exact(Length(field), HASH_SIZE), name=name)


class LogEntry(AppendOnlyModel):
    """One leaf of the log: the bytes the caller gave, exactly."""

    index = models.PositiveBigIntegerField(unique=True, editable=False)
    leaf = models.BinaryField(editable=False)
    leaf_hash = models.BinaryField(max_length=HASH_SIZE, editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["index"]
        verbose_name_plural = "log entries"
        constraints = [_hash_size("leaf_hash", "artifacts_logentry_hash_size")]

    def __str__(self) -> str:
        return f"log entry {self.index}"


class LogNode(AppendOnlyModel):
    """The hash of the complete subtree over leaves ``index * 2**level`` to
    ``(index + 1) * 2**level - 1`` (level 0: the leaf hash)."""

    level = models.PositiveSmallIntegerField(editable=False)
    index = models.PositiveBigIntegerField(editable=False)
    hash = models.BinaryField(max_length=HASH_SIZE, editable=False)

    class Meta:
        ordering = ["level", "index"]
        constraints = [
            # also the index proofs read nodes by: WHERE (level = l AND index IN …)
            models.UniqueConstraint(
                fields=["level", "index"], name="artifacts_lognode_position_unique"
            ),
            models.CheckConstraint(
                condition=Q(level__lte=63), name="artifacts_lognode_level_valid"
            ),
            _hash_size("hash", "artifacts_lognode_hash_size"),
        ]

    def __str__(self) -> str:
        return f"log node {self.level}/{self.index}"


class LogState(models.Model):
    """The one row every append locks (``SELECT … FOR UPDATE``): the tree's size
    and its peaks (the hashes of its largest complete subtrees, left to right,
    ``HASH_SIZE`` bytes each), so an append reads nothing else."""

    SINGLETON: ClassVar[int] = 1

    id = models.PositiveSmallIntegerField(primary_key=True, default=SINGLETON)
    size = models.PositiveBigIntegerField(default=0)
    peaks = models.BinaryField(default=b"")

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(id=1), name="artifacts_logstate_singleton"
            ),
        ]

    def __str__(self) -> str:
        return f"log of {self.size} entries"


class Checkpoint(AppendOnlyModel):
    """A signed checkpoint (C2SP tlog-checkpoint), one per tree size at most."""

    size = models.PositiveBigIntegerField(unique=True, editable=False)
    root_hash = models.BinaryField(max_length=HASH_SIZE, editable=False)
    origin = models.CharField(max_length=255, editable=False)
    verifier_key = models.CharField(max_length=400, editable=False)
    note = models.TextField(editable=False)  # the signed note, byte for byte
    created_at = models.DateTimeField(
        default=timezone.now, db_index=True, editable=False
    )

    class Meta:
        ordering = ["-size"]
        constraints = [_hash_size("root_hash", "artifacts_checkpoint_hash_size")]

    def __str__(self) -> str:
        return f"checkpoint at size {self.size}"
