"""A conversation's review status (unreviewed, in review, reviewed, flagged), set by reviewers and audited."""

from __future__ import annotations

from django.contrib.auth.models import User

from chats.errors import InvalidInput
from chats.models import Conversation, ReviewStatus
from chats.services.audit import audit_record, audited_write


@audited_write
def conversation_set_review_status(*, actor: User, conversation: Conversation, status: str) -> bool:
    if status not in ReviewStatus.values:
        raise InvalidInput([{"path": "/status", "message": f"must be one of {', '.join(ReviewStatus.values)}"}])
    before = conversation.review_status
    if before == status:
        return False
    conversation.review_status = status
    conversation.save(update_fields=["review_status"])
    audit_record(
        actor=actor,
        action="conversation.status_changed",
        target_type="conversation",
        target_id=conversation.uuid,
        conversation_uuid=conversation.uuid,
        before={"review_status": before},
        after={"review_status": status},
    )
    return True
