"""The admin audit UI: sources and keys, labels, and a read-only view of everything ingested and audited.

Ingested data and the audit log are read-only here: they change only through ingestion and the services. Writes
with side effects (a source, a key, revoking a key, a label, changing or deleting feedback) go through
``chats.services`` so that they are audited like any other; every other add, change and delete (users and their
roles, groups, deleting a source) is audited by ``AuditedModelAdmin``, and so is a password changed here.

Where things live (importing this package registers every admin):

- ``base``: ``ReadOnlyAdmin`` (view only, every stored field shown), ``AuditedModelAdmin``, ``YesNoFilter``;
- ``sources``: sources, their API keys and the page that creates a key;
- ``conversations``: conversations with their thread, messages, tool calls, injected artifacts, the ids injection
  contexts list;
- ``receipts``: ingestion receipts (their payload shown and downloadable, old payloads removed by an action),
  the payloads themselves, and the bytes each key sent per day;
- ``feedback``: labels, feedback and the labels given in it;
- ``audit``: the audit log, and the read audit (who opened which conversation);
- ``review``: team review queues, their rules, rubric versions, items, leases, reviews, resolutions and datasets,
  read-only;
- ``jobs``: export jobs, their results' chunks and queue-rule runs, read-only;
- ``saved_views``: saved views of the conversation list, read-only;
- ``trends``: the Trends page's daily rollups, read-only (derived, rebuilt by their service);
- ``users``: users, groups and the admin's own password change, audited;
- ``signin``: failed sign-ins (django-axes' records) and unlocking a user name, audited.

Tables shown inside a page are templates under ``templates/admin/chats/``.
"""

from chats.admin import (
    audit,
    conversations,
    feedback,
    jobs,
    receipts,
    review,
    saved_views,
    signin,
    sources,
    trends,
    users,
)
from chats.admin.base import AuditedModelAdmin, ReadOnlyAdmin

__all__ = [
    "AuditedModelAdmin",
    "ReadOnlyAdmin",
    "audit",
    "conversations",
    "feedback",
    "jobs",
    "receipts",
    "review",
    "saved_views",
    "signin",
    "sources",
    "trends",
    "users",
]
