"""``python -m genrm.cli.store_fields``: store the fields of every recipe command again (:class:`FieldStore`), after
a change of a command's own fields or of the TRL, transformers or peft release."""

from __future__ import annotations

from genrm.cli.main import make_parser
from genrm.cli.recipes import STORED_COMMANDS, FieldStore


def store_all() -> list[FieldStore]:
    """Store the fields of every recipe command of the ``genrm`` command (its plug-ins included) again."""
    make_parser()  # imports every command's module, so that each declares its store
    for store, make in STORED_COMMANDS:
        store.write(make())
    return [store for store, _ in STORED_COMMANDS]


if __name__ == "__main__":
    for written in store_all():
        print(f"stored the fields of {written.command} in {written.path}")
