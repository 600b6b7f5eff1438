"""Downgrades that destroy data run only when confirmed, and say what they destroy.

Confirmation, any of: `alembic -x confirm-data-loss=yes downgrade …`, the environment variable
WINDOWRAG_CONFIRM_DATA_LOSS=yes, or `downgrade(conn, revision, confirm_data_loss=True)`.
The decision and the message are pure functions; guard_data_loss() applies them inside a migration.
"""
from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence

from alembic.util import CommandError

CONFIRM_X_ARGUMENT = "confirm-data-loss"
CONFIRM_ENV = "WINDOWRAG_CONFIRM_DATA_LOSS"
CONFIRM_ATTRIBUTE = "confirm_data_loss"   # alembic Config.attributes key set by connection.downgrade()
LISTED_COLLECTIONS = 20


class DataLossNotConfirmed(CommandError):
    """A downgrade would delete stored data and was not confirmed; nothing was changed."""


def is_confirmed(*, x_arguments: Mapping[str, str], environ: Mapping[str, str], attribute: object) -> bool:
    yes = {"yes", "true", "1"}
    return (attribute is True
            or x_arguments.get(CONFIRM_X_ARGUMENT, "").strip().lower() in yes
            or environ.get(CONFIRM_ENV, "").strip().lower() in yes)


def describe_loss(action: str, per_collection: Sequence[tuple[str, int, int]]) -> str:
    """'ACTION deletes 2 collections, 5 documents and 40 sentences (a: 1 document, 3 sentences; …)'."""
    documents = sum(row[1] for row in per_collection)
    sentences = sum(row[2] for row in per_collection)
    listed = "; ".join(f"{name}: {_count(d, 'document')}, {_count(s, 'sentence')}"
                       for name, d, s in per_collection[:LISTED_COLLECTIONS])
    if len(per_collection) > LISTED_COLLECTIONS:
        listed += f"; and {len(per_collection) - LISTED_COLLECTIONS} more"
    return (f"{action} deletes {_count(len(per_collection), 'collection')}, {_count(documents, 'document')} "
            f"and {_count(sentences, 'sentence')} ({listed})")


def refusal(loss: str) -> str:
    return (f"{loss}. Nothing was changed. To go ahead, confirm: alembic -x {CONFIRM_X_ARGUMENT}=yes downgrade …, "
            f"or {CONFIRM_ENV}=yes, or downgrade(conn, revision, confirm_data_loss=True)")


def guard_data_loss(action: str, per_collection: Sequence[tuple[str, int, int]]) -> None:
    """Inside a migration: refuse (DataLossNotConfirmed) unless confirmed; say what is lost either way."""
    if not per_collection:
        return  # nothing stored, nothing lost
    import os

    from alembic import context

    loss = describe_loss(action, per_collection)
    if not is_confirmed(x_arguments=context.get_x_argument(as_dictionary=True), environ=os.environ,
                        attribute=context.config.attributes.get(CONFIRM_ATTRIBUTE)):
        raise DataLossNotConfirmed(refusal(loss))
    # on stderr, not a logger: alembic's command line configures no log handler, and this must be seen
    print(f"windowrag: confirmed: {loss}", file=sys.stderr)


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"
