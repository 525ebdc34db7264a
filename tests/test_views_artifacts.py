"""The artifact pages of chats/views/artifacts.py (/artifacts/ and /artifacts/<id>/). Documents go in through the
ingest API, as in production. (The dashboard's policy figures: tests/selectors/test_dashboard.py.)"""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from chats.models import Conversation, Source
from chats.services.feedback import feedback_submit
from tests.factories import make_conversation, make_labels
from tests.factories.artifacts import (
    FIRST_MARKDOWN,
    PROTOCOL,
    SECOND_MARKDOWN,
    page,
    protocol_document,
    section,
    two_versions_in_three_conversations,
)
from tests.factories.artifacts import ingested as post
from tests.factories.policy import DISABLED_RECORD, NEVER_USED, PERMITTED, UNLISTED_DISCUSSION, document

pytestmark = pytest.mark.django_db


@pytest.fixture
def reader(client: Client, reviewer: User) -> Client:
    client.force_login(reviewer)
    return client


def diff_lines(diff: str, change: str) -> list[str]:
    """The text of a diff's added or removed lines, as a reader (or a screen reader) gets it."""
    lines = re.findall(rf'diff-{change}">(.*?)</span>\n', diff, re.S)
    return [html.unescape(re.sub(r"<[^>]+>", "", line)) for line in lines]


# --- the case ----------------------------------------------------------------------------------------


def test_a_protocol_injected_with_two_payloads_into_three_conversations_shows_two_versions(
    ingest_client: APIClient, reader: Client
) -> None:
    one, two, three = [post(ingest_client, body) for body in two_versions_in_three_conversations()]

    body = page(reader, reverse("chats:artifact_detail", args=[PROTOCOL]))

    versions = section(body, "versions-title")
    first, second = versions.split('<li class="version"')[1:]
    assert "Payload versions (2)" in versions
    assert {f"/conversations/{one}/", f"/conversations/{two}/"} <= set(re.findall(r'href="([^"]+)"', first))
    assert f"/conversations/{three}/" not in first
    assert f"/conversations/{three}/" in second and f"/conversations/{one}/" not in second
    assert "2 conversations" in first and "1 conversation," in second
    # The diff of the two: removed and added lines are marked with - and +, not by colour alone.
    diff = section(body, "diff-title")
    [removed] = diff_lines(diff, "removed")
    [added] = diff_lines(diff, "added")
    assert removed.startswith('removed: -   "markdown": "# Plasmid miniprep\\n\\n1. Pellet 3 mL')
    assert added.startswith('added: +   "markdown": "# Plasmid miniprep\\n\\n1. Pellet 5 mL')
    assert added.endswith(SECOND_MARKDOWN.splitlines()[-1] + '"')


def test_two_versions_can_be_compared_either_way(ingest_client: APIClient, reader: Client) -> None:
    for body in two_versions_in_three_conversations():
        post(ingest_client, body)
    url = reverse("chats:artifact_detail", args=[PROTOCOL])
    digests = re.findall(r'<option value="([0-9a-f]{64})"', page(reader, url))
    old, new = digests[:2]

    forward = section(page(reader, f"{url}?old={old}&new={new}"), "diff-title")
    backward = section(page(reader, f"{url}?old={new}&new={old}"), "diff-title")
    same = section(page(reader, f"{url}?old={old}&new={old}"), "diff-title")

    assert forward.count("diff-added") == backward.count("diff-removed") > 0
    assert "Pellet 5 mL" in forward.split("diff-added", 1)[1] and "Pellet 5 mL" in backward.split("diff-removed", 1)[1]
    assert "Choose two different versions" in same


def test_a_payload_s_markup_is_shown_as_text_in_the_versions_and_the_diff(
    ingest_client: APIClient, reader: Client
) -> None:
    post(ingest_client, protocol_document("plain", FIRST_MARKDOWN))
    post(ingest_client, protocol_document("hostile", '<script>alert(1)</script><img src=x onerror="alert(2)">'))

    body = page(reader, reverse("chats:artifact_detail", args=[PROTOCOL]))

    assert "<script>alert(1)" not in body and "<img src=x" not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in section(body, "diff-title")


# --- the list ------------------------------------------------------------------------------------------------


def test_the_list_shows_each_artifact_s_figures_and_links_to_its_page(
    ingest_client: APIClient, reader: Client, reviewer: User
) -> None:
    uuid = post(ingest_client, document())
    [label] = make_labels("outdated")
    feedback_submit(author=reviewer, conversation=Conversation.objects.get(uuid=uuid), score=1, labels=[label])

    body = page(reader, "/artifacts/")

    rows = {
        html.unescape(re.search(r"<code>(.*?)</code>", row).group(1)): row  # type: ignore[union-attr]
        for row in body.split("<tr>")[2:]
    }
    assert set(rows) == {PERMITTED, NEVER_USED, DISABLED_RECORD, UNLISTED_DISCUSSION, *rows} and len(rows) == 5
    record = rows[DISABLED_RECORD]
    assert reverse("chats:artifact_detail", args=[DISABLED_RECORD]) in record
    cells = re.findall(r'<td class="num">(.*?)</td>', record, re.S)
    assert [re.sub(r"<[^>]+>", "", cell).strip() for cell in cells] == ["1", "0", "⚠ 1"]
    assert "▲ 1" in record and "outdated \N{MULTIPLICATION SIGN}1" in record
    never = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r'<td class="num">(.*?)</td>', rows[NEVER_USED])]
    assert never == ["0", "1", "0"] and "never" in rows[NEVER_USED]


def test_the_list_filters_by_kind_and_source_and_pages_keep_them(
    source: Source, other_source: Source, ingest_client: APIClient, other_ingest_key: str, reader: Client
) -> None:
    post(ingest_client, document())
    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION=f"Api-Key {other_ingest_key}")
    post(other, protocol_document("elsewhere", FIRST_MARKDOWN, artifact_id="airalogy.id.protocol.elsewhere.v.1"))

    records = page(reader, "/artifacts/?kind=record")
    theirs = page(reader, f"/artifacts/?source={other_source.name}&sort=violations")
    bad = page(reader, "/artifacts/?kind=spell&source=nowhere")

    assert DISABLED_RECORD in records and PERMITTED not in records
    assert "airalogy.id.protocol.elsewhere.v.1" in theirs and DISABLED_RECORD not in theirs
    assert f"/api/v1/export/artifacts/?source={other_source.name}&amp;sort=violations" in theirs
    assert 'class="error"' in bad and DISABLED_RECORD in bad  # invalid filters are reported and left out


def test_ids_with_slashes_and_url_characters_have_their_page(ingest_client: APIClient, reader: Client) -> None:
    artifact_id = "files/2024/run 7/protocol.md?v=2#top%20"
    uuid = post(ingest_client, protocol_document("odd", FIRST_MARKDOWN, artifact_id=artifact_id))

    url = reverse("chats:artifact_detail", args=[artifact_id])
    body = page(reader, url)

    assert url == "/artifacts/files/2024/run%207/protocol.md%3Fv=2%23top%2520/"
    assert f"/conversations/{uuid}/" in body and html.escape(artifact_id) in body
    assert url in page(reader, "/artifacts/")


def test_an_artifact_nobody_injected_or_listed_is_not_found(reader: Client) -> None:
    assert reader.get("/artifacts/airalogy.id.protocol.nobody/").status_code == 404
    assert reader.get("/artifacts/abc%00def/").status_code == 404


def test_an_id_only_listed_shows_the_conversations_that_permitted_it(ingest_client: APIClient, reader: Client) -> None:
    uuid = post(ingest_client, document())

    body = page(reader, reverse("chats:artifact_detail", args=[NEVER_USED]))

    assert "Never injected" in body
    assert f"/conversations/{uuid}/" in section(body, "listed-title")


# --- query counts ----------------------------------------------------------------------------------------------


def test_the_pages_take_the_same_queries_for_few_and_many_artifacts(
    source: Source, ingest_client: APIClient, reader: Client, reviewer: User, django_assert_num_queries: Any
) -> None:
    [label] = make_labels("helpful")
    sizes = ((0, 1), (1, 15))
    for first, last in sizes:
        for number in range(first, last):
            uuid = post(ingest_client, protocol_document(f"chat-{number}", f"# Version {number % 4}"))
            post(ingest_client, document() | {"chat_id": f"policy-{number}"})
            other_id = f"airalogy.id.protocol.{number}.v.1"
            post(ingest_client, protocol_document(f"other-{number}", "# Other", artifact_id=other_id))
            feedback_submit(author=reviewer, conversation=Conversation.objects.get(uuid=uuid), score=-1, labels=[label])
        make_conversation(source)
        # session, user, groups, the sources of the filter, grouped figures, scores, labels
        with django_assert_num_queries(7):
            page(reader, "/artifacts/?sort=conversations")
        # + the chosen source
        with django_assert_num_queries(8):
            page(reader, f"/artifacts/?source={source.name}&kind=protocol")
        # session, user, groups, figures, scores, labels, versions, their payloads, their conversations, the
        # conversations that only listed it
        with django_assert_num_queries(10):
            page(reader, reverse("chats:artifact_detail", args=[PROTOCOL]))
