"""The pages of chats/views/ -- sign-in, the list, the thread (in windows, and the chunks it loads), the next
unreviewed conversation and the dashboard: who may see each, what it shows, and how many queries it takes (the same
with 1 row or many). Feedback, review status and the branch switch are in tests/test_views_feedback.py, the artifact
pages in tests/test_views_artifacts.py."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from chats.models import Conversation, Message, SavedView, Source, ToolCall
from chats.selectors.threads import FIRST_WINDOW, WINDOW_SIZE, path_window
from tests import factories
from tests.factories.documents import load_fixture

pytestmark = pytest.mark.django_db


def signed_in(client: Client, user: User) -> Client:
    client.force_login(user)
    return client


# --------------------------------------------------------------------------------------------------------------
# Sign-in and roles


@pytest.mark.parametrize("url", ["/", "/conversations/", "/conversations/next/"])
def test_anonymous_visitors_are_sent_to_sign_in(client: Client, url: str) -> None:
    response = client.get(url + "?source=demo")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?next=")
    assert "source%3Ddemo" in response["Location"]


def test_anonymous_visitors_are_sent_to_sign_in_from_a_thread(client: Client, source: Source) -> None:
    conversation = factories.make_conversation(source)
    response = client.get(conversation.get_absolute_url())
    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next={conversation.get_absolute_url()}"


@pytest.mark.parametrize("url", ["/", "/conversations/", "/conversations/next/"])
def test_users_without_a_role_get_403(client: Client, no_role_user: User, url: str) -> None:
    assert signed_in(client, no_role_user).get(url).status_code == 403


def test_users_without_a_role_cannot_open_a_thread(client: Client, no_role_user: User, source: Source) -> None:
    conversation = factories.make_conversation(source)
    assert signed_in(client, no_role_user).get(conversation.get_absolute_url()).status_code == 403


def test_the_sign_in_page_renders_and_signs_in(client: Client, reviewer: User) -> None:
    page = client.get("/accounts/login/")
    assert page.status_code == 200
    assert b'<label for="id_username">' in page.content
    response = client.post(
        "/accounts/login/",
        {"username": "rita", "password": "correct horse battery staple", "next": "/conversations/"},
    )
    assert response.status_code == 302
    assert response["Location"] == "/conversations/"


def test_sign_out_is_a_post(client: Client, reviewer: User) -> None:
    signed_in(client, reviewer)
    response = client.post("/accounts/logout/")
    assert response.status_code == 302
    assert client.get("/").status_code == 302


@pytest.mark.parametrize("fixture", ["reviewer", "auditor", "admin_user"])
def test_reviewers_auditors_and_staff_can_read(client: Client, source: Source, fixture: str, request) -> None:
    user = request.getfixturevalue(fixture)
    conversation = factories.make_conversation(source)
    signed_in(client, user)
    for url in ["/", "/conversations/", conversation.get_absolute_url()]:
        assert client.get(url).status_code == 200


# --------------------------------------------------------------------------------------------------------------
# The list


def test_the_list_shows_each_row_with_its_summary(client: Client, reviewer: User, source: Source) -> None:
    conversation = factories.make_conversation(source, title="Nonspecific bands", branches=1)
    body = signed_in(client, reviewer).get("/conversations/").content.decode()
    assert "Nonspecific bands" in body
    assert conversation.get_absolute_url() in body
    assert "tool call" in body
    assert "2 branches" in body
    assert "qwen3.5-flash" in body
    assert "Unreviewed" in body


def test_the_list_filters_and_keeps_the_filters_in_row_links(client: Client, reviewer: User, source: Source) -> None:
    with_tools = factories.make_conversation(source, title="With tools", with_tools=True)
    factories.make_conversation(source, title="Without tools", with_tools=False)
    body = signed_in(client, reviewer).get("/conversations/?has_tool_calls=true&source=masterbrain").content.decode()
    assert "With tools" in body
    assert "Without tools" not in body
    assert f"{with_tools.get_absolute_url()}?source=masterbrain&amp;has_tool_calls=true" in body


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("tool_name=airalogy_search", {"tools"}),
        ("tool_name=nothing_like_it", set()),
        ("model=gpt-4.1", {"plain"}),
        ("user=airalogy.id.user.99", {"plain"}),
        ("format=record_qa", {"record"}),
        ("artifact_kind=protocol", {"record"}),
        ("status=unreviewed", {"tools", "plain", "record"}),
        ("date_from=2026-01-02&date_to=2026-01-02", {"plain"}),
    ],
)
def test_each_filter_narrows_the_list(
    client: Client, reviewer: User, source: Source, query: str, expected: set[str]
) -> None:
    factories.make_conversation(source, title="tools", with_tools=True, start_time="2026-01-01T10:00:00Z")
    factories.make_conversation(
        source,
        title="plain",
        with_tools=False,
        model="gpt-4.1",
        user_id="airalogy.id.user.99",
        start_time="2026-01-02T23:30:00Z",
    )
    record = factories.make_record_qa(source)
    titles = {"tools", "plain", "record"}
    body = signed_in(client, reviewer).get(f"/conversations/?{query}").content.decode()
    record_url = record.get_absolute_url()
    shown = {t for t in titles if t != "record" and f">{t}</a>" in body} | ({"record"} if record_url in body else set())
    assert shown == expected


def test_searching_message_text(client: Client, reviewer: User, source: Source) -> None:
    factories.make_conversation(source, title="about pcr", topic="thermocycler")
    factories.make_conversation(source, title="about blots", topic="nitrocellulose")
    body = signed_in(client, reviewer).get("/conversations/?q=nitrocellulose").content.decode()
    assert "about blots" in body
    assert "about pcr" not in body


def test_filtering_by_score_and_label(client: Client, reviewer: User, source: Source) -> None:
    from chats.services.feedback import feedback_submit

    liked = factories.make_conversation(source, title="liked")
    factories.make_conversation(source, title="untouched")
    (helpful,) = factories.make_labels("helpful")
    feedback_submit(
        author=reviewer, conversation=liked, message=factories.last_assistant(liked), score=1, labels=[helpful]
    )
    signed_in(client, reviewer)
    for query in ["score=1", "label=helpful"]:
        body = client.get(f"/conversations/?{query}").content.decode()
        assert ">liked</a>" in body and ">untouched</a>" not in body
    body = client.get("/conversations/?score=-1").content.decode()
    assert ">liked</a>" not in body


def test_an_invalid_filter_value_is_reported_not_crashing(client: Client, reviewer: User, source: Source) -> None:
    factories.make_conversation(source, title="kept")
    response = signed_in(client, reviewer).get("/conversations/?date_from=yesterday&format=nope")
    assert response.status_code == 400  # as on the API; the errors are shown next to their fields
    assert "Enter a valid date" in response.content.decode()


def test_keyset_pages_go_forward_and_back_keeping_filters(client: Client, reviewer: User, source: Source) -> None:
    from chats.selectors.conversations import PAGE_SIZE

    for number in range(PAGE_SIZE + 5):
        factories.make_conversation(
            source,
            title=f"conv {number:03d}",
            with_tools=False,
            n_messages=2,
            start_time=f"2026-02-{1 + number // 24:02d}T{number % 24:02d}:00:00Z",
        )
    signed_in(client, reviewer)
    first = client.get("/conversations/?has_tool_calls=false")
    assert first.context["page"].previous_cursor is None
    assert len(first.context["page"].conversations) == PAGE_SIZE
    next_cursor = first.context["page"].next_cursor
    body = first.content.decode()
    assert f"?has_tool_calls=false&amp;after={next_cursor}" in body
    second = client.get(f"/conversations/?has_tool_calls=false&after={next_cursor}")
    titles = [c.title for c in second.context["page"].conversations]
    assert titles == [f"conv {n:03d}" for n in range(4, -1, -1)]
    assert second.context["page"].next_cursor is None
    back = client.get(f"/conversations/?has_tool_calls=false&before={second.context['page'].previous_cursor}")
    assert [c.title for c in back.context["page"].conversations] == [
        c.title for c in first.context["page"].conversations
    ]
    assert back.context["page"].previous_cursor is None


def test_the_list_can_be_read_oldest_first(client: Client, reviewer: User, source: Source) -> None:
    factories.make_conversation(source, title="older", start_time="2026-01-01T00:00:00Z")
    factories.make_conversation(source, title="newer", start_time="2026-03-01T00:00:00Z")
    body = signed_in(client, reviewer).get("/conversations/?sort=oldest").content.decode()
    assert body.index(">older</a>") < body.index(">newer</a>")


def test_a_garbled_cursor_starts_from_the_first_page(client: Client, reviewer: User, source: Source) -> None:
    factories.make_conversation(source, title="only")
    assert b">only</a>" in signed_in(client, reviewer).get("/conversations/?after=%%%garbage").content


def _list_queries(client: Client, django_assert_num_queries, count: int) -> None:
    # session, user, groups, one page of conversations, the result count (at most 1,001 ids), the saved views (own
    # and shared, with their owners); the sources and labels the filter form offers come from the cache
    with django_assert_num_queries(6):
        response = client.get("/conversations/?has_tool_calls=true")
    assert response.status_code == 200
    assert len(response.context["page"].conversations) == count


def test_the_list_takes_the_same_queries_for_1_and_50_conversations(
    client: Client, reviewer: User, source: Source, django_assert_num_queries
) -> None:
    signed_in(client, reviewer)
    factories.make_conversation(source, n_messages=5)
    client.get("/conversations/")  # the filter form's choices cached
    _list_queries(client, django_assert_num_queries, 1)
    for _ in range(49):
        factories.make_conversation(source, n_messages=5, branches=1)
    # Saved views, the person's own and shared ones by others, are read in the same one query however many.
    lead = User.objects.create_user("lena-views")
    for index in range(5):
        SavedView.objects.create(owner=reviewer, name=f"mine {index}", query="score=-1")
        SavedView.objects.create(owner=lead, name=f"team {index}", query="status=unreviewed", shared=True)
    _list_queries(client, django_assert_num_queries, 50)


def test_filters_on_related_tables_return_each_conversation_once(
    client: Client, reviewer: User, source: Source
) -> None:
    conversation = factories.make_conversation(source, n_messages=12)  # several airalogy_search calls
    response = signed_in(client, reviewer).get("/conversations/?tool_name=airalogy_search&q=annealing")
    assert [c.pk for c in response.context["page"].conversations] == [conversation.pk]


# --------------------------------------------------------------------------------------------------------------
# The thread


def test_the_thread_shows_the_active_path_with_roles(client: Client, reviewer: User, source: Source) -> None:
    conversation = factories.make_conversation(source, n_messages=7, branches=1)
    body = signed_in(client, reviewer).get(conversation.get_absolute_url()).content.decode()
    assert "Alternative answer 1." in body
    assert "Answer 2: check" not in body
    assert 'class="message role-system set-apart' in body
    assert "<strong>annealing temperature</strong>" in body


def test_tool_calls_link_to_their_result_and_back(client: Client, reviewer: User, source: Source) -> None:
    conversation = factories.make_conversation(source, n_messages=5)
    call_message = Message.objects.get(conversation=conversation, role="assistant", tool_call_id="", depth=2)
    result = Message.objects.get(conversation=conversation, role="tool")
    call = call_message.tool_calls.get()
    body = signed_in(client, reviewer).get(conversation.get_absolute_url()).content.decode()
    assert f'id="call-{call.pk}"' in body
    assert f'href="#m-{result.pk}"' in body
    assert f'href="#call-{call.pk}"' in body
    assert "&#34;keywords&#34;: [\n    &#34;PCR&#34;\n  ]" in body  # pretty-printed arguments


def test_unanswered_calls_orphan_results_and_bad_arguments_are_flagged(
    client: Client, reviewer: User, source: Source
) -> None:
    conversation = factories.make_hostile_conversation(source)
    body = signed_in(client, reviewer).get(conversation.get_absolute_url()).content.decode()
    assert "Unanswered: no tool message answers this call" in body
    assert "Orphan result" in body
    assert "Arguments are not valid JSON" in body
    assert "Malformed protocol id" in body


def test_injections_show_kind_id_state_and_payload(client: Client, reviewer: User, source: Source) -> None:
    conversation = factories.make_record_qa(source)
    artifact = conversation.artifacts.filter(kind="protocol", resolved=True).first()
    assert artifact is not None
    body = signed_in(client, reviewer).get(conversation.get_absolute_url()).content.decode()
    assert "Injected protocol" in body
    assert artifact.artifact_id in body
    assert "Show the protocol" in body
    if conversation.artifacts.filter(kind="record", resolved=True).exists():
        assert "Record data" in body


def test_the_branch_switcher_shows_the_thread_along_another_branch(
    client: Client, reviewer: User, source: Source
) -> None:
    conversation = factories.make_conversation(source, n_messages=5, branches=2, with_tools=False)
    last = Message.objects.filter(conversation=conversation, depth=4).order_by("id")
    first_branch, _, newest = list(last)
    signed_in(client, reviewer)
    body = client.get(conversation.get_absolute_url()).content.decode()
    assert "3 of 3" in body
    assert "Alternative answer 2." in body
    other = client.get(f"{conversation.get_absolute_url()}?at={first_branch.pk}").content.decode()
    assert "1 of 3" in other
    assert "Answer 2: check" in other
    assert "Alternative answer 2." not in other
    assert "another branch than the conversation" in other
    conversation.refresh_from_db()
    assert Message.objects.get(pk=newest.pk).on_active_path  # reading a branch does not change the stored path


def test_a_reviewer_can_make_a_branch_the_active_one(client: Client, reviewer: User, source: Source) -> None:
    conversation = factories.make_conversation(source, n_messages=3, branches=1, with_tools=False)
    first = Message.objects.filter(conversation=conversation, depth=2).order_by("id").first()
    assert first is not None and not first.on_active_path
    response = signed_in(client, reviewer).post(
        reverse("chats:active_branch", args=[conversation.uuid]),
        {"message": first.pk, "next": f"{conversation.get_absolute_url()}?at={first.pk}&status=unreviewed"},
    )
    assert response.status_code == 302
    assert response["Location"] == f"{conversation.get_absolute_url()}?status=unreviewed#m-{first.pk}"
    first.refresh_from_db()
    assert first.on_active_path


def test_chatgpt_branches_and_imported_feedback_show(client: Client, reviewer: User, source: Source) -> None:
    conversation = factories.make_chatgpt_branches(source)
    body = signed_in(client, reviewer).get(conversation.get_absolute_url()).content.decode()
    assert 'class="branch-switcher"' in body


def test_imported_feedback_is_shown_with_its_origin(client: Client, reviewer: User, source: Source) -> None:
    document = load_fixture("chat_document/masterbrain_chat_document.json")
    conversation = factories.ingest(source, document, format="chat_document")
    assert conversation.feedback.exists(), "the fixture carries human_feedback"
    body = signed_in(client, reviewer).get(conversation.get_absolute_url()).content.decode()
    assert "Imported: Masterbrain human_feedback" in body


def test_the_thread_of_an_unknown_conversation_is_404(client: Client, reviewer: User) -> None:
    assert signed_in(client, reviewer).get("/conversations/00000000-0000-4000-8000-000000000000/").status_code == 404


def _thread_queries(
    client: Client,
    conversation: Conversation,
    django_assert_num_queries,
    path: str = "",
    *,
    first_view: bool = True,
    other_branch: bool = False,
) -> str:
    # session, user, groups, conversation; the window: the active path's length and the window's messages, their
    # siblings (branch points) -- or, through another branch, the tree skeleton and the window's messages --; tool
    # calls, artifacts, feedback (with authors), feedback labels, label taxonomy; "Given to the model": the
    # context's ids, the injections' verdicts, the names of the tools called, the prompts along the path; the
    # reader's first view of the conversation in the read audit's window is recorded (one INSERT)
    with django_assert_num_queries(16 - other_branch + first_view):
        response = client.get(conversation.get_absolute_url() + path)
    assert response.status_code == 200
    return response.content.decode()


def test_the_thread_takes_the_same_queries_for_5_and_500_messages(
    client: Client, reviewer: User, source: Source, django_assert_num_queries
) -> None:
    from chats.services.feedback import feedback_submit

    signed_in(client, reviewer)
    factories.make_labels()
    small = factories.make_conversation(source, n_messages=5)
    big = factories.make_conversation(source, n_messages=500, branches=2)
    assert big.message_count == 502
    for conversation in (small, big):
        feedback_submit(
            author=reviewer,
            conversation=conversation,
            message=factories.last_assistant(conversation),
            score=1,
            comment="fine",
        )
        # Feedback on the whole conversation shows on every branch: the labels query runs on each path.
        feedback_submit(author=reviewer, conversation=conversation, score=0, comment="ok")
    _thread_queries(client, small, django_assert_num_queries)
    body = _thread_queries(client, big, django_assert_num_queries)
    # The first window, numbered along the whole path.
    assert body.count('data-nav-item aria-label="') == FIRST_WINDOW
    assert 'message 1 of 500">' in body and f'message {FIRST_WINDOW} of 500">' in body
    first = Message.objects.filter(conversation=big, depth=499).order_by("id").first()
    assert first is not None
    body = _thread_queries(
        client, big, django_assert_num_queries, f"?at={first.pk}", first_view=False, other_branch=True
    )
    assert f'id="m-{first.pk}"' in body and 'message 500 of 500">' in body  # a branch opens at its message


def test_the_thread_keeps_the_list_filters_in_its_links(client: Client, reviewer: User, source: Source) -> None:
    conversation = factories.make_conversation(source)
    body = (
        signed_in(client, reviewer).get(f"{conversation.get_absolute_url()}?status=unreviewed&q=pcr").content.decode()
    )
    assert 'href="/conversations/?status=unreviewed&amp;q=pcr"' in body
    assert f"/conversations/next/?status=unreviewed&amp;q=pcr&amp;from={conversation.uuid}" in body


def test_auditors_see_no_feedback_forms(client: Client, auditor: User, source: Source) -> None:
    conversation = factories.make_conversation(source)
    body = signed_in(client, auditor).get(conversation.get_absolute_url()).content.decode()
    assert "Give feedback" not in body
    assert "Mark reviewed" not in body


# --------------------------------------------------------------------------------------------------------------
# The queue


def test_next_unreviewed_follows_the_filters_and_the_current_conversation(
    client: Client, reviewer: User, source: Source
) -> None:
    from chats.services.review import conversation_set_review_status

    newest = factories.make_conversation(source, title="newest", start_time="2026-03-03T00:00:00Z")
    middle = factories.make_conversation(source, title="middle", start_time="2026-03-02T00:00:00Z", with_tools=False)
    oldest = factories.make_conversation(source, title="oldest", start_time="2026-03-01T00:00:00Z")
    conversation_set_review_status(actor=reviewer, conversation=newest, status="reviewed")
    signed_in(client, reviewer)
    response = client.get("/conversations/next/")
    assert response["Location"] == middle.get_absolute_url()
    response = client.get(f"/conversations/next/?has_tool_calls=true&from={newest.uuid}")
    assert response["Location"] == f"{oldest.get_absolute_url()}?has_tool_calls=true"
    response = client.get(f"/conversations/next/?from={oldest.uuid}")
    assert response["Location"] == middle.get_absolute_url()  # wraps around
    response = client.get("/conversations/next/?from=not-a-uuid")
    assert response["Location"] == middle.get_absolute_url()


def test_next_unreviewed_with_an_empty_queue_returns_to_the_list(client: Client, reviewer: User) -> None:
    response = signed_in(client, reviewer).get("/conversations/next/?model=none")
    assert response["Location"] == "/conversations/?model=none"


def test_next_unreviewed_queries(client: Client, reviewer: User, source: Source, django_assert_num_queries) -> None:
    newer = factories.make_conversation(source, start_time="2026-03-02T00:00:00Z")
    older = factories.make_conversation(source, start_time="2026-03-01T00:00:00Z")
    signed_in(client, reviewer)
    # session, user, groups, the current conversation, the next one
    with django_assert_num_queries(5):
        response = client.get(f"/conversations/next/?from={newer.uuid}")
    assert response["Location"] == older.get_absolute_url()


# --------------------------------------------------------------------------------------------------------------
# The dashboard


def test_the_dashboard_shows_counts_charts_and_recent_activity(
    client: Client, reviewer: User, source: Source, django_assert_num_queries
) -> None:
    from chats.services.review import conversation_set_review_status

    conversation = factories.make_record_qa(source)
    factories.make_conversation(source, n_messages=8)
    conversation_set_review_status(actor=reviewer, conversation=conversation, status="in_review")
    signed_in(client, reviewer)
    # session, user, groups, by source, by model, by status, by score, by label, tools, artifacts, events,
    # violations per day, artifacts with the worst feedback
    with django_assert_num_queries(13):
        response = client.get("/")
    body = response.content.decode()
    assert response.status_code == 200
    assert "<svg" in body and "Most-used tools" in body
    assert "airalogy_search" in body
    assert "conversation.status_changed" in body
    assert "Most injected artifacts" in body


@pytest.mark.postgres
def test_search_uses_postgres_full_text_with_stemming_and_web_syntax(
    client: Client, reviewer: User, source: Source
) -> None:
    factories.make_conversation(source, title="pcr", topic="thermocyclers")
    factories.make_conversation(source, title="blots", topic="nitrocellulose")
    signed_in(client, reviewer)

    def titles(q: str) -> set[str]:
        return {c.title for c in client.get("/conversations/", {"q": q}).context["page"].conversations}

    assert titles("thermocycler") == {"pcr"}  # stemmed: the text says "thermocyclers"
    assert titles("thermocycler OR nitrocellulose") == {"pcr", "blots"}
    assert titles("annealing -nitrocellulose") == {"pcr"}
    assert titles('"annealing temperature"') == {"pcr", "blots"}


# --------------------------------------------------------------------------------------------------------------
# A long thread in windows: the page's first window and its links to the rest, and the chunks the page loads
# (thread_messages); which messages a window holds is tested in tests/selectors/test_threads.py.

LONG = 300


@pytest.fixture
def long_thread(source: Source) -> Conversation:
    return factories.make_conversation(source, n_messages=LONG)


def at_depth(conversation: Conversation, depth: int) -> Message:
    return Message.objects.get(conversation=conversation, depth=depth, on_active_path=True)


def chunk_url(conversation: Conversation) -> str:
    return f"/conversations/{conversation.uuid}/messages/"


def positions(body: str) -> list[int]:
    return [int(p) for p in re.findall(r'<li class="message-item" data-position="(\d+)">', body)]


# --------------------------------------------------------------------------------------------------------------
# The thread page in windows


def test_the_page_shows_the_first_window_and_a_gap_for_the_rest(
    client: Client, reviewer: User, long_thread: Conversation
) -> None:
    client.force_login(reviewer)
    body = client.get(long_thread.get_absolute_url()).content.decode()

    assert positions(body) == list(range(FIRST_WINDOW))
    assert f'data-total="{LONG}"' in body and f'data-chunk-url="{chunk_url(long_thread)}"' in body
    assert f'<li class="window-gap" data-after="{FIRST_WINDOW - 1}" data-before="{LONG}">' in body
    assert f'href="?after={FIRST_WINDOW - 1}">Messages {FIRST_WINDOW + 1}–{LONG} of {LONG}' in body  # noqa: RUF001


def test_the_page_around_a_deep_message_shows_it_and_links_both_ways(
    client: Client, reviewer: User, long_thread: Conversation
) -> None:
    deep = at_depth(long_thread, 212)
    client.force_login(reviewer)

    body = client.get(f"{long_thread.get_absolute_url()}?around={deep.pk}").content.decode()

    assert positions(body) == list(range(207, 207 + FIRST_WINDOW))  # from a little before it
    assert f'id="m-{deep.pk}"' in body and "message 213 of 300" in body
    assert '<li class="window-gap" data-after="-1" data-before="207">' in body
    assert f'href="?after={207 - 1 - FIRST_WINDOW}">Messages 1–207 of 300' in body  # noqa: RUF001
    # Its feedback link (no JavaScript) and form lead back to this window.
    assert f"?feedback={deep.pk}&amp;around={deep.pk}#fb-{deep.pk}" in body


def test_the_page_ignores_window_parameters_that_are_not_valid(
    client: Client, reviewer: User, long_thread: Conversation
) -> None:
    client.force_login(reviewer)
    for query in ("?after=-4", "?around=abc", "?after=x&around=0", f"?around={2**70}"):
        response = client.get(long_thread.get_absolute_url() + query)
        assert response.status_code == 200, query
        assert positions(response.content.decode()) == list(range(FIRST_WINDOW)), query


def test_links_to_a_message_outside_the_window_open_the_page_around_it(
    client: Client, reviewer: User, long_thread: Conversation
) -> None:
    result = Message.objects.filter(conversation=long_thread, role="tool", depth__gt=1).order_by("depth").first()
    assert result is not None
    call = result.answered_calls.get()
    assert call.message.depth == result.depth - 1
    client.force_login(reviewer)

    # A window of the call alone links to its result, and one of the result alone back to the call, around them.
    alone = client.get(chunk_url(long_thread), {"after": call.message.depth - 1, "limit": 1}).content.decode()
    assert f'class="to-result" href="?around={result.pk}#m-{result.pk}"' in alone
    alone = client.get(chunk_url(long_thread), {"after": result.depth - 1, "limit": 1}).content.decode()
    assert f'class="to-call" href="?around={call.message_id}#call-{call.pk}"' in alone
    # Within one window, the links stay on the page.
    both = client.get(chunk_url(long_thread), {"after": call.message.depth - 1, "limit": 2}).content.decode()
    assert f'class="to-result" href="#m-{result.pk}"' in both and f'class="to-call" href="#call-{call.pk}"' in both


# --------------------------------------------------------------------------------------------------------------
# The thread's chunks


def test_a_chunk_after_a_position_holds_the_next_messages_numbered_along_the_path(
    client: Client, reviewer: User, long_thread: Conversation
) -> None:
    client.force_login(reviewer)

    response = client.get(chunk_url(long_thread), {"after": 99, "limit": 30})

    assert response.status_code == 200
    body = response.content.decode()
    assert positions(body) == list(range(100, 130))
    assert "message 101 of 300" in body and "<html" not in body
    assert 'hx-get="/conversations/' in body  # its feedback links, for htmx to wire up


def test_a_chunk_around_a_message_holds_it(client: Client, reviewer: User, long_thread: Conversation) -> None:
    deep = at_depth(long_thread, 280)
    client.force_login(reviewer)

    body = client.get(chunk_url(long_thread), {"around": deep.pk}).content.decode()

    assert f'id="m-{deep.pk}"' in body and positions(body) == list(range(LONG - WINDOW_SIZE, LONG))


def test_a_chunk_answers_bad_parameters_with_400_and_a_message_off_the_path_with_404(
    client: Client, reviewer: User, source: Source
) -> None:
    conversation = factories.make_conversation(source, n_messages=5, branches=1, with_tools=False)
    other = Message.objects.get(conversation=conversation, depth=4, on_active_path=False)
    client.force_login(reviewer)
    for query in ({"limit": 0}, {"limit": 501}, {"after": -1}, {"after": "x"}, {"around": 2**70}):
        assert client.get(chunk_url(conversation), query).status_code == 400, query
    assert client.get(chunk_url(conversation), {"around": other.pk}).status_code == 404
    # Along its own branch, the same message is there.
    body = client.get(chunk_url(conversation), {"around": other.pk, "at": other.pk}).content.decode()
    assert f'id="m-{other.pk}"' in body


def test_a_chunk_refuses_anonymous_visitors_and_users_without_a_role(
    client: Client, no_role_user: User, long_thread: Conversation
) -> None:
    response = client.get(chunk_url(long_thread), {"after": 5})
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    client.force_login(no_role_user)
    assert client.get(chunk_url(long_thread), {"after": 5}).status_code == 403


def test_a_chunk_takes_the_same_queries_for_a_short_and_a_long_thread(
    client: Client, reviewer: User, source: Source, long_thread: Conversation, django_assert_num_queries: Any
) -> None:
    short = factories.make_conversation(source, n_messages=8)
    client.force_login(reviewer)
    for conversation in (short, long_thread):
        client.get(conversation.get_absolute_url())  # the view recorded: the chunk below is read alone
        # session, user, groups, conversation; the path's length, the window's messages, their siblings; tool
        # calls, artifacts, feedback (with authors), label taxonomy
        with django_assert_num_queries(11):
            response = client.get(chunk_url(conversation), {"after": 2, "limit": WINDOW_SIZE})
        assert response.status_code == 200 and positions(response.content.decode())[0] == 3


# --------------------------------------------------------------------------------------------------------------
# The next unanswered tool call


@pytest.fixture
def unanswered_deep(source: Source) -> tuple[Conversation, Message]:
    """A long thread with one call, far past the first window, that no tool message answers."""
    messages = factories.make_messages(LONG)
    index = next(i for i, m in enumerate(messages) if m["role"] == "tool" and i > 2 * WINDOW_SIZE)
    messages[index] = {"role": "user", "content": "Never mind the search."}
    document = {"chat_id": "airalogy.id.chat.unanswered", "model": "qwen3.5-flash", "main_messages": messages}
    conversation = factories.ingest(source, document, format="chat_document")
    caller = ToolCall.objects.get(conversation=conversation, result_message__isnull=True).message
    assert caller.depth > 2 * WINDOW_SIZE - 2
    return conversation, caller


def test_the_next_unanswered_call_is_found_past_any_window(unanswered_deep: tuple[Conversation, Message]) -> None:
    conversation, caller = unanswered_deep

    window = path_window(conversation, unanswered_after=-1, limit=WINDOW_SIZE)
    assert window.around == caller.pk and caller in window.messages

    assert path_window(conversation, unanswered_after=caller.depth, limit=WINDOW_SIZE).around is None


def test_the_chunk_and_the_page_of_the_next_unanswered_call(
    client: Client, reviewer: User, unanswered_deep: tuple[Conversation, Message]
) -> None:
    conversation, caller = unanswered_deep
    client.force_login(reviewer)

    chunk = client.get(chunk_url(conversation), {"unanswered_after": 3})
    assert chunk.status_code == 200 and 'class="tool-call unanswered"' in chunk.content.decode()
    assert client.get(chunk_url(conversation), {"unanswered_after": caller.depth}).status_code == 404

    first = client.get(conversation.get_absolute_url()).content.decode()
    assert 'href="?unanswered_after=-1" data-next-unanswered>' in first and 'tool-call unanswered"' not in first
    # Without JavaScript, the link opens the window around it, and from there searches past it.
    page = client.get(conversation.get_absolute_url(), {"unanswered_after": -1}).content.decode()
    assert f'id="m-{caller.pk}"' in page and f'href="?unanswered_after={caller.depth}" data-next-unanswered>' in page


def test_on_another_branch_the_page_opens_at_its_message_and_links_back_to_its_start(
    client: Client, reviewer: User, source: Source
) -> None:
    conversation = factories.make_conversation(source, n_messages=150, branches=1, with_tools=False)
    other = Message.objects.get(conversation=conversation, depth=149, on_active_path=False)
    root = at_depth(conversation, 0)
    client.force_login(reviewer)

    body = client.get(conversation.get_absolute_url(), {"at": other.pk}).content.decode()
    assert positions(body) == list(range(150 - FIRST_WINDOW, 150)) and f'id="m-{other.pk}"' in body
    before = 150 - 2 * FIRST_WINDOW - 1
    assert f'href="?at={other.pk}&amp;after={before}">Messages 1–{150 - FIRST_WINDOW} of 150' in body  # noqa: RUF001
    # The window before it, and from there the branch's start.
    body = client.get(conversation.get_absolute_url(), {"at": other.pk, "after": before}).content.decode()
    assert positions(body) == list(range(before + 1, before + 1 + FIRST_WINDOW))
    assert f'href="?at={other.pk}&amp;around={root.pk}">Messages 1–{before + 1} of 150' in body  # noqa: RUF001

    start = client.get(conversation.get_absolute_url(), {"at": other.pk, "around": root.pk}).content.decode()
    assert positions(start) == list(range(FIRST_WINDOW)) and "another branch than the conversation" in start
