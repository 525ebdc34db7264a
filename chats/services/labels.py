"""Labels reviewers attach to feedback: created, renamed and deleted, each audited."""

from __future__ import annotations

from typing import Any

from chats.audit_actions import AuditAction
from chats.models import Label
from chats.selectors.filter_choices import offered_choices_forget
from chats.services.audit import Actor, audit_record, audited_update, audited_write


def _label_values(label: Label) -> dict[str, Any]:
    return {"name": label.name, "description": label.description}


@audited_write
def label_create(*, name: str, description: str = "", actor: Actor = None) -> Label:
    label = Label.objects.create(name=name, description=description)
    offered_choices_forget()
    audit_record(
        actor=actor,
        action=AuditAction.LABEL_CREATED,
        target_type="label",
        target_id=label.pk,
        after=_label_values(label),
    )
    return label


@audited_write
def label_update(*, label: Label, name: str, description: str, actor: Actor = None) -> None:
    """Rename or redescribe a label; feedback that carries it carries the new name."""
    audited_update(label, {"name": name, "description": description}, actor=actor)
    offered_choices_forget()


@audited_write
def label_delete(*, label: Label, actor: Actor = None) -> None:
    """Delete a label no feedback carries (a label in use is protected, and this raises ProtectedError)."""
    before = _label_values(label)
    pk = label.pk
    label.delete()
    offered_choices_forget()
    audit_record(actor=actor, action=AuditAction.LABEL_DELETED, target_type="label", target_id=pk, before=before)
