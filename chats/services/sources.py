"""Sources (the systems that send conversations) and API keys: created, changed and revoked, each audited."""

from __future__ import annotations

from datetime import datetime

from django.contrib.auth.models import User
from django.utils import timezone

from chats.audit_actions import AuditAction
from chats.models import ApiKey, Source
from chats.services.audit import Actor, UserLike, audit_record, audited_update, audited_write


@audited_write
def source_get_or_create(
    *, name: str, description: str = "", is_active: bool = True, actor: Actor = None
) -> tuple[Source, bool]:
    """The source named `name`; created (with `description` and `is_active`) when there is none."""
    source, created = Source.objects.get_or_create(
        name=name, defaults={"description": description, "is_active": is_active}
    )
    if created:
        audit_record(
            actor=actor,
            action=AuditAction.SOURCE_CREATED,
            target_type="source",
            target_id=source.pk,
            after={"name": name, "description": description, "is_active": is_active},
        )
    return source, created


@audited_write
def source_update(*, source: Source, description: str, is_active: bool, actor: Actor = None) -> None:
    audited_update(source, {"description": description, "is_active": is_active}, actor=actor)


@audited_write
def api_key_create(
    *,
    source: Source | None = None,
    user: User | None = None,
    name: str = "",
    expires_at: datetime | None = None,
    actor: Actor = None,
) -> tuple[ApiKey, str]:
    """Create a key and return it with the secret, which is never stored and cannot be shown again."""
    raw_key = ApiKey.generate()
    key = ApiKey.objects.create(
        source=source,
        user=user,
        name=name,
        prefix=raw_key[3 : 3 + ApiKey.PREFIX_LENGTH],
        key_hash=ApiKey.hash_key(raw_key),
        expires_at=expires_at,
    )
    owner = f"source:{source.name}" if source else f"user:{user.get_username() if user else ''}"
    audit_record(
        actor=actor,
        action=AuditAction.API_KEY_CREATED,
        target_type="api_key",
        target_id=key.pk,
        after={
            "owner": owner,
            "prefix": key.prefix,
            "name": name,
            "expires_at": expires_at.isoformat() if expires_at else None,
        },
    )
    return key, raw_key


@audited_write
def api_key_revoke(*, key: ApiKey, actor: UserLike = None) -> None:
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])
        audit_record(
            actor=actor,
            action=AuditAction.API_KEY_REVOKED,
            target_type="api_key",
            target_id=key.pk,
            before={"revoked": False},
            after={"revoked": True},
        )
