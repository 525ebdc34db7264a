"""The full-text vectors' SQL on PostgreSQL: a trigger builds each message's vector (and each conversation's
title vector) in the statement that writes the row, so that what is stored is searchable when it commits.

A vector costs more than the rest of a message's ingestion; built in the writing statement, it is paid once, by
the process that stores the message, for that message alone: appending to a long conversation indexes only what
it adds. Only the first ``MASTERBRAIN_SEARCH_MESSAGE_CHARS`` characters of a message are indexed (tsvector's
positions stop at 16,383 in any case, and a vector is capped at 1 MB); the message itself is stored whole.

The cap is written into the trigger's function, which `manage.py migrate` puts back whenever the setting changes
(`search_schema_apply`, on post_migrate): a new cap applies to the messages stored from then on.
"""

from __future__ import annotations

from django.db.backends.base.base import BaseDatabaseWrapper

# The text-search configuration of every vector and query: English stemming, so that "thermocycler" finds
# "thermocyclers".
CONFIG = "english"


def message_function_sql(cap: int) -> str:
    return f"""
CREATE OR REPLACE FUNCTION chats_message_search_vector() RETURNS trigger AS $$
BEGIN
    NEW.search_vector := to_tsvector('{CONFIG}'::regconfig, left(NEW.text, {int(cap)}));
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
"""


TITLE_FUNCTION_SQL = f"""
CREATE OR REPLACE FUNCTION chats_conversation_title_vector() RETURNS trigger AS $$
BEGIN
    NEW.title_vector := to_tsvector('{CONFIG}'::regconfig, NEW.title);
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
"""


def search_schema_apply(connection: BaseDatabaseWrapper, cap: int) -> None:
    """Put the message trigger's function back with ``cap`` (PostgreSQL; nothing elsewhere)."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(message_function_sql(cap))
