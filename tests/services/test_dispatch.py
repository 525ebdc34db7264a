"""Services send tasks by name (chats/services/dispatch.py): every name it sends is a task the workers know."""

from __future__ import annotations

from celery import current_app

from chats.services import dispatch


def test_every_name_sent_is_a_registered_task() -> None:
    current_app.loader.import_default_modules()
    names = [dispatch.EXPORT_JOB_RUN, dispatch.INGEST_QUEUED, dispatch.QUEUE_RULE_RUN]
    assert [name for name in names if name not in current_app.tasks] == []
