"""Every action an audit event can record: the one list of them (chats.services.audit stores only these).

A new audited write adds its action here, then passes the member to `audit_record` (mypy refuses a plain string).
The values are stored (AuditEvent.action), filtered on (`/audit/?action=`) and hashed into the chain: a value never
changes once released. No Django here, so that the models can name an action too.
"""

from __future__ import annotations

from enum import StrEnum, unique
from typing import Literal

RowChange = Literal["created", "updated", "deleted"]


@unique
class AuditAction(StrEnum):
    # Conversations: ingestion's outcomes, then what people do to them.
    CONVERSATION_CREATED = "conversation.created"
    CONVERSATION_APPENDED = "conversation.appended"
    CONVERSATION_BRANCHED = "conversation.branched"
    CONVERSATION_UPDATED = "conversation.updated"
    CONVERSATION_DELETED = "conversation.deleted"
    CONVERSATION_STATUS_CHANGED = "conversation.status_changed"
    CONVERSATION_BRANCH_SWITCHED = "conversation.branch_switched"
    CONVERSATION_EXPORTED = "conversation.exported"
    # Feedback.
    FEEDBACK_CREATED = "feedback.created"
    FEEDBACK_UPDATED = "feedback.updated"
    FEEDBACK_DELETED = "feedback.deleted"
    LABEL_CREATED = "label.created"
    LABEL_UPDATED = "label.updated"
    LABEL_DELETED = "label.deleted"
    # Team review.
    QUEUE_CREATED = "queue.created"
    QUEUE_UPDATED = "queue.updated"
    QUEUE_ITEMS_ADDED = "queue.items_added"
    QUEUE_ITEM_LEASED = "queue_item.leased"
    QUEUE_ITEM_ASSIGNED = "queue_item.assigned"
    QUEUE_ITEM_RELEASED = "queue_item.released"
    QUEUE_ITEM_RESOLVED = "queue_item.resolved"
    REVIEW_DRAFT_SAVED = "review.draft_saved"
    REVIEW_SUBMITTED = "review.submitted"
    QUEUE_RULE_CREATED = "queue_rule.created"
    QUEUE_RULE_UPDATED = "queue_rule.updated"
    QUEUE_RULE_DELETED = "queue_rule.deleted"
    QUEUE_RULE_RAN = "queue_rule.ran"
    DATASET_CREATED = "dataset.created"
    DATASET_FROZEN = "dataset.frozen"
    EXPORT_JOB_CREATED = "export_job.created"
    # Saved views of the conversation list.
    SAVED_VIEW_CREATED = "saved_view.created"
    SAVED_VIEW_UPDATED = "saved_view.updated"
    SAVED_VIEW_DELETED = "saved_view.deleted"
    # Sources, keys and accounts.
    SOURCE_CREATED = "source.created"
    SOURCE_UPDATED = "source.updated"
    SOURCE_DELETED = "source.deleted"
    API_KEY_CREATED = "api_key.created"
    API_KEY_REVOKED = "api_key.revoked"
    USER_CREATED = "user.created"
    USER_UPDATED = "user.updated"
    USER_DELETED = "user.deleted"
    GROUP_CREATED = "group.created"
    GROUP_UPDATED = "group.updated"
    GROUP_DELETED = "group.deleted"
    SIGNIN_UNLOCKED = "signin.unlocked"
    # Retention and the log itself.
    RECEIPT_PAYLOADS_PRUNED = "receipt.payloads_pruned"
    # Its string is the one the log has always stored (written when read events were called view events): an
    # action's string never changes, so that every entry of one action reads alike.
    READ_EVENTS_PRUNED = "view_events.pruned"
    AUDIT_EXPORTED = "audit.exported"
    AUDIT_VERIFIED = "audit.verified"

    @classmethod
    def row(cls, model_name: str, change: RowChange) -> AuditAction:
        """The action of a row created, changed or deleted through `audited` (the admin's forms, the commands'
        accounts): "<model>.<change>". A model written that way needs its three members above."""
        try:
            return cls(f"{model_name}.{change}")
        except ValueError:
            raise ValueError(
                f"no audit action {model_name}.{change}: add it to chats.audit_actions.AuditAction"
            ) from None


# The actions ingestion records, one per conversation it created or changed.
INGESTION_ACTIONS = frozenset(
    {
        AuditAction.CONVERSATION_CREATED,
        AuditAction.CONVERSATION_APPENDED,
        AuditAction.CONVERSATION_BRANCHED,
        AuditAction.CONVERSATION_UPDATED,
    }
)
