"""Plain multi-row INSERTs for the ingest's thousands of rows.

``QuerySet.bulk_create`` builds a model instance per row and runs each value
through the compiler; for an ingest of 2,000 files that is 3 x 2,000 rows
(blobs, bundle files, deposit blobs) and, on the development VM, 0.107 s per
2,000 ``BundleFile`` rows on SQLite. ``insert_rows`` sends the rows as tuples
with one ``executemany`` per batch: 0.011 s for the same rows. Each value still
goes through its field's ``get_db_prep_save``, so dates and the like are adapted
as Django would; what is skipped is the model instances, ``pre_save`` (so every
column without a database default must be given: ``auto_now``/``default`` are
not applied) and the returned primary keys. Like ``bulk_create`` it sends no
signals.

Preparing is itself most of the cost of a row (0.2 ms per 3 values under a
profiler), so two shortcuts skip the field's methods where their answer is
known: a ``str`` for a plain character column and an ``int`` for a plain
integer column (or a foreign key to one) are sent as they are, which is what
those fields' methods return for them; and a value that is the very object the
row before had in that column (a foreign key shared by every row, one
timestamp; not a mutable one) reuses that row's prepared value.

``large_write_cache``: on SQLite, a page cache of ``LARGE_WRITE_CACHE_KIB`` for
the connection while a transaction of thousands of rows runs (SQLite's default is
2 MiB): an accepted bundle of 2,000 files writes some 6,000 rows and a 300 kB log
leaf at once, and with 2 MiB their dirty pages spilled to the WAL before the
commit (saving the deposit's row took 0.13 s of a 0.27 s accept, then 1 ms).
Only while it runs: a connection that kept 32 MiB would keep whatever a long
read, such as the fixity check's of every blob row, brought into it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from itertools import islice
from typing import Any, Final

from django.db import connections, models, router
from django.db.models import Field, Model
from django.db.models.constants import OnConflict

BATCH: Final = 1000
LARGE_WRITE_CACHE_KIB: Final = 32 * 1024
# Fields whose preparation of a value of this exact type is that value itself
# (exact classes: a subclass may prepare differently).
_AS_IS: Final[dict[type[Field[Any, Any]], type]] = {
    models.CharField: str,
    models.TextField: str,
    models.SmallIntegerField: int,
    models.IntegerField: int,
    models.BigIntegerField: int,
    models.PositiveSmallIntegerField: int,
    models.PositiveIntegerField: int,
    models.PositiveBigIntegerField: int,
    models.AutoField: int,
    models.BigAutoField: int,
    models.SmallAutoField: int,
}
_MUTABLE: Final = (dict, list, set, bytearray)  # may change between two rows


def _fields(model: type[Model], names: Sequence[str]) -> list[Field[Any, Any]]:
    fields = [model._meta.get_field(name) for name in names]
    for field in fields:
        if not field.concrete or field.many_to_many or field.primary_key:
            message = f"{model.__name__}.{field.name} is not an insertable column"
            raise ValueError(message)
    return fields  # type: ignore[return-value]


def _as_is_type(field: Field[Any, Any]) -> type | None:
    """The value type ``field`` sends to the database unchanged, if any."""
    if type(field) is models.ForeignKey:
        field = field.target_field
    return _AS_IS.get(type(field))


class _Column:
    """One column's preparation, with the shortcuts of the module docstring."""

    def __init__(self, field: Field[Any, Any], connection: Any) -> None:
        self.field, self.connection = field, connection
        self.as_is = _as_is_type(field)
        self.last: Any = self  # a value no row has
        self.last_prepared: Any = None

    def prepare(self, value: Any) -> Any:
        if type(value) is self.as_is:
            return value
        if value is not self.last or type(value) in _MUTABLE:
            self.last = value
            self.last_prepared = self.field.get_db_prep_save(value, self.connection)
        return self.last_prepared


def insert_rows(
    model: type[Model],
    names: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    ignore_conflicts: bool = False,
) -> None:
    """INSERT ``rows`` (one sequence of values per row, in the order of ``names``:
    field names; a foreign key takes the related row's primary key) into
    ``model``'s table, in the caller's transaction. ``ignore_conflicts``: rows
    that break a unique constraint are skipped, as ``bulk_create`` does."""
    fields = _fields(model, names)
    connection = connections[router.db_for_write(model)]
    quote = connection.ops.quote_name
    columns = [field.column for field in fields if field.column]  # concrete: all
    on_conflict = OnConflict.IGNORE if ignore_conflicts else None
    sql = " ".join(
        part
        for part in (
            connection.ops.insert_statement(on_conflict=on_conflict),
            quote(model._meta.db_table),
            f"({', '.join(quote(column) for column in columns)})",
            f"VALUES ({', '.join(['%s'] * len(fields))})",
            connection.ops.on_conflict_suffix_sql(fields, on_conflict, None, None),
        )
        if part
    )
    prepare = [_Column(field, connection).prepare for field in fields]
    prepared = (
        [column(value) for column, value in zip(prepare, row, strict=True)]
        for row in rows
    )
    with connection.cursor() as cursor:
        while batch := list(islice(prepared, BATCH)):
            cursor.executemany(sql, batch)


@contextmanager
def large_write_cache(model: type[Model]) -> Iterator[None]:
    """On SQLite, ``LARGE_WRITE_CACHE_KIB`` of page cache for the connection that
    writes ``model`` while the block runs, then the size it had (which frees the
    pages beyond it); nothing on another database (module docstring)."""
    connection = connections[router.db_for_write(model)]
    if connection.vendor != "sqlite":
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA cache_size")
        (before,) = cursor.fetchone()
        cursor.execute(f"PRAGMA cache_size = {-LARGE_WRITE_CACHE_KIB:d}")
    try:
        yield
    finally:
        # not on a connection closed meanwhile (a new one starts at the default),
        # nor inside a failed transaction (whose error must reach the caller; the
        # connection closes at the end of the request)
        if connection.connection is not None and not connection.needs_rollback:
            with connection.cursor() as cursor:
                cursor.execute(f"PRAGMA cache_size = {int(before):d}")
