"""Audit actions are named once, in chats.audit_actions.AuditAction: no code in chats/ spells one out, every write
passes a member, and every model the admin audits row by row has its actions there."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from django.contrib import admin

from chats.admin.base import AuditedModelAdmin
from chats.audit_actions import AuditAction
from chats.services.audit import audit_event

CHATS = Path(__file__).resolve().parent.parent / "chats"
VALUES = {str(action) for action in AuditAction}
AUDIT_CALLS = {"audit_record", "audit_event"}


def _python_files() -> list[Path]:
    return sorted(
        path for path in CHATS.rglob("*.py") if "migrations" not in path.parts and path.name != "audit_actions.py"
    )


def test_no_audit_action_is_spelled_out_outside_the_enum() -> None:
    found = []
    for path in _python_files():
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Constant) and node.value in VALUES:
                found.append(f"{path.relative_to(CHATS.parent)}:{node.lineno}: {node.value!r}")
    assert found == []


def test_every_audit_call_passes_a_member_not_a_string() -> None:
    found = []
    for path in _python_files():
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            if name not in AUDIT_CALLS:
                continue
            for keyword in node.keywords:
                if keyword.arg == "action" and isinstance(keyword.value, ast.Constant | ast.JoinedStr):
                    found.append(f"{path.relative_to(CHATS.parent)}:{node.lineno}")
    assert found == []


def test_the_scan_finds_a_spelled_out_action() -> None:
    tree = ast.parse('audit_record(actor=None, action="label.created", target_type="label", target_id=1)')
    assert any(isinstance(node, ast.Constant) and node.value in VALUES for node in ast.walk(tree))


@pytest.mark.parametrize(
    "model",
    [model for model, model_admin in admin.site._registry.items() if isinstance(model_admin, AuditedModelAdmin)],
    ids=lambda model: model._meta.label_lower,
)
def test_every_model_the_admin_audits_has_its_row_actions(model: type) -> None:
    name = model._meta.model_name  # type: ignore[attr-defined]
    assert [AuditAction.row(name, change) for change in ("created", "updated", "deleted")] == [
        f"{name}.created",
        f"{name}.updated",
        f"{name}.deleted",
    ]


def test_a_row_action_not_in_the_enum_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"add it to chats\.audit_actions\.AuditAction"):
        AuditAction.row("queue", "deleted")


def test_an_event_stores_the_value_itself() -> None:
    event = audit_event(actor=None, action=AuditAction.LABEL_CREATED, target_type="label", target_id=1)
    assert type(event.action) is str
    assert event.action == "label.created"
