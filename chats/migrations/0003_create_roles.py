"""The two roles: Reviewers read conversations and manage their own feedback; Auditors read everything."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

REVIEWER_PERMISSIONS = [
    "view_conversation",
    "view_message",
    "view_toolcall",
    "view_injectedartifact",
    "view_label",
    "view_feedback",
    "add_feedback",
    "change_feedback",
    "delete_feedback",
    "review_conversation",
]
AUDITOR_MODELS = [
    "source",
    "conversation",
    "message",
    "toolcall",
    "injectedartifact",
    "label",
    "feedback",
    "ingestionreceipt",
    "auditevent",
]
AUDITOR_PERMISSIONS = [f"view_{model}" for model in AUDITOR_MODELS] + ["export_conversation"]


def create_roles(apps, schema_editor):
    # Permissions are normally created after all migrations; make sure they exist now.
    from django.apps import apps as global_apps

    create_permissions(global_apps.get_app_config("chats"), apps=apps, verbosity=0)
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, codenames in (("Reviewers", REVIEWER_PERMISSIONS), ("Auditors", AUDITOR_PERMISSIONS)):
        group, _ = Group.objects.get_or_create(name=name)
        group.permissions.add(
            *Permission.objects.filter(content_type__app_label="chats", codename__in=codenames)
        )


def remove_roles(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=["Reviewers", "Auditors"]).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("chats", "0002_conversation_search_index"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]
    operations = [migrations.RunPython(create_roles, remove_roles)]
