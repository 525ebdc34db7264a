"""On PostgreSQL, what team review publishes is never changed in place, by the database as for the audit log:

- a rubric version is never updated or deleted (a changed rubric is a new version; reviews and resolutions keep
  theirs, and Review and Resolution protect it from deletion as well). A queue therefore cannot be deleted: its
  deletion would take its rubric versions along;
- a submitted review is never updated (a draft is: it may be saved again, and submitted once);
- a resolution is never updated (a later resolution replaces it as a new row).

Deleting a conversation still deletes its reviews and resolutions along with it, as rows, never changing them:
erasure wins (docs/SECURITY.md). TRUNCATE is a statement the row triggers do not see: only a table's owner issues
one, and the test suite's flush does.
"""

from django.db import migrations

# Review.state of a submitted review (chats.models.ReviewState.SUBMITTED).
SUBMITTED = "submitted"

TRIGGERS_SQL = f"""
CREATE OR REPLACE FUNCTION chats_rubricversion_immutable() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'a rubric version is never changed or deleted: % of rubric version % refused', TG_OP, OLD.id
        USING ERRCODE = 'insufficient_privilege',
              HINT = 'A changed rubric is saved as a new version of its queue.';
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER chats_rubricversion_immutable
    BEFORE UPDATE OR DELETE ON chats_rubricversion
    FOR EACH ROW EXECUTE FUNCTION chats_rubricversion_immutable();

CREATE OR REPLACE FUNCTION chats_review_submitted_immutable() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'a submitted review is never changed: UPDATE of review % refused', OLD.id
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER chats_review_submitted_immutable
    BEFORE UPDATE ON chats_review
    FOR EACH ROW WHEN (OLD.state = '{SUBMITTED}') EXECUTE FUNCTION chats_review_submitted_immutable();

CREATE OR REPLACE FUNCTION chats_resolution_immutable() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'a resolution is never changed: UPDATE of resolution % refused', OLD.id
        USING ERRCODE = 'insufficient_privilege',
              HINT = 'A later resolution of the item replaces it as a new row.';
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER chats_resolution_immutable
    BEFORE UPDATE ON chats_resolution
    FOR EACH ROW EXECUTE FUNCTION chats_resolution_immutable();
"""

DROP_SQL = """
DROP TRIGGER IF EXISTS chats_resolution_immutable ON chats_resolution;
DROP FUNCTION IF EXISTS chats_resolution_immutable();
DROP TRIGGER IF EXISTS chats_review_submitted_immutable ON chats_review;
DROP FUNCTION IF EXISTS chats_review_submitted_immutable();
DROP TRIGGER IF EXISTS chats_rubricversion_immutable ON chats_rubricversion;
DROP FUNCTION IF EXISTS chats_rubricversion_immutable();
"""


def add_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(TRIGGERS_SQL, params=None)


def drop_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP_SQL, params=None)


class Migration(migrations.Migration):
    dependencies = [("chats", "0024_audit_checkpoints_and_no_truncate")]

    operations = [migrations.RunPython(add_triggers, drop_triggers)]
