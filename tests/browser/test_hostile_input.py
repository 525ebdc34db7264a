"""Hostile input end to end: every payload of tests/factories/hostile.py in every field a page shows, ingested
through the API, then every page that shows it opened in Chromium.

On each page: no dialog, page error or CSP violation (the `problems` fixture), `window.__pwned` never set, no
element, attribute or URL from the data that could run script or load anything, no horizontal overflow (the
document no wider than the viewport, every box in `main` inside `main` unless it scrolls in a box of its own).

Requests: every request to another host than the live server is recorded and aborted, so nothing ever leaves the
machine, and any such request fails the test: not even the images the data carries explicitly as images (a Markdown
image, an image part) may load by themselves (they show as a button naming their host, tests/browser/
test_remote_images.py).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import pytest
from django.contrib.auth.models import User
from django.urls import reverse
from playwright.sync_api import Error as PlaywrightError

from chats.models import AuditEvent, Conversation, Feedback, InjectedArtifact, Label, Message
from chats.services.feedback import feedback_submit
from chats.services.sources import api_key_create, source_get_or_create
from tests.browser.conftest import Problems, sign_in
from tests.factories import hostile
from tests.security.raw_ingest import post

pytestmark = [pytest.mark.django_db(transaction=True)]

# Run in the page after it loaded: everything that shows data from the documents went wrong in one of these ways.
FINDINGS_JS = """
([allowStyles, marker]) => {
  const found = [];
  const here = location.origin;
  const describe = (el) => {
    const id = el.id ? "#" + el.id : "";
    const cls = typeof el.className === "string" && el.className ? "." + el.className.trim().split(/\\s+/).join(".") : "";
    return `<${el.tagName.toLowerCase()}${id}${cls}>`;
  };
  if (window.__pwned !== undefined) found.push("a payload ran: window.__pwned is set");
  if (document.querySelector(marker)) found.push(`raw HTML from the data is in the DOM (<${marker}>)`);
  for (const el of document.querySelectorAll("iframe, frame, object, embed, base, meta[http-equiv], applet, portal")) {
    found.push(`forbidden element ${describe(el)}`);
  }
  if (!allowStyles) {
    for (const el of document.querySelectorAll("body style")) found.push(`a <style> element in the body`);
  }
  for (const el of document.querySelectorAll("script")) {
    if (el.src) {
      if (new URL(el.src).origin !== here) found.push(`a script from ${el.src}`);
    } else if (el.type !== "application/json") {
      found.push(`an inline script: ${el.textContent.slice(0, 80)}`);
    }
  }
  for (const el of document.querySelectorAll("link[href]")) {
    if (new URL(el.href, document.baseURI).origin !== here) found.push(`a <link> to ${el.href}`);
  }
  const urlAttributes = new Set(["href", "src", "action", "formaction", "xlink:href", "poster", "data", "background", "srcset", "ping", "cite"]);
  for (const el of document.querySelectorAll("*")) {
    const tag = el.tagName.toLowerCase();
    for (const attr of el.attributes) {
      const name = attr.name.toLowerCase();
      const value = attr.value;
      if (name.startsWith("on")) { found.push(`an event handler ${name} on ${describe(el)}`); continue; }
      if (name === "srcdoc") { found.push(`srcdoc on ${describe(el)}`); continue; }
      if (name === "style" && !allowStyles) { found.push(`a style attribute on ${describe(el)}: ${value.slice(0, 80)}`); continue; }
      if (name.startsWith("hx-on") || name.startsWith("data-hx-") || name === "hx-trigger") {
        found.push(`htmx attribute ${name} on ${describe(el)}`); continue;
      }
      if ((name === "hx-get" || name === "hx-post") && !value.startsWith("/")) {
        found.push(`${name}=${value.slice(0, 80)} on ${describe(el)}`); continue;
      }
      if (!urlAttributes.has(name) || value === "") continue;
      if (name === "srcset" || name === "ping") { found.push(`${name} on ${describe(el)}`); continue; }
      let url;
      try { url = new URL(value, document.baseURI); } catch (e) { continue; }
      const protocol = url.protocol;
      if (tag === "a" && name === "href" && ["http:", "https:", "mailto:"].includes(protocol)) continue;
      if (protocol === "data:") {
        const media = value.trim().slice(5).toLowerCase();
        if ((tag === "img" && name === "src" && media.startsWith("image/"))
            || (tag === "audio" && name === "src" && media.startsWith("audio/"))) continue;
        found.push(`${name}=${value.slice(0, 60)} on ${describe(el)}`); continue;
      }
      if ((protocol === "http:" || protocol === "https:") && url.origin === here) continue;
      found.push(`${name}=${value.slice(0, 80)} on ${describe(el)}`);
    }
  }
  return found;
}
"""

LAYOUT_JS = """
(bidiSelectors) => {
  const found = [];
  const describe = (el) => {
    const id = el.id ? "#" + el.id : "";
    const cls = typeof el.className === "string" && el.className ? "." + el.className.trim().split(/\\s+/).join(".") : "";
    return `<${el.tagName.toLowerCase()}${id}${cls}>`;
  };
  const root = document.documentElement;
  if (root.scrollWidth > root.clientWidth + 1) {
    found.push(`the document is ${root.scrollWidth}px wide in a ${root.clientWidth}px viewport`);
  }
  const main = document.querySelector("main") || document.body;
  const box = main.getBoundingClientRect();
  const scrolls = (el) => {
    const overflow = getComputedStyle(el).overflowX;
    return overflow !== "visible" && overflow !== "clip";
  };
  // Elements inside a box that scrolls (or clips) horizontally may be as wide as they like: the box holds them.
  const held = new Set();
  for (const el of main.querySelectorAll("*")) {
    if (held.has(el.parentElement) || (el.parentElement !== main && el.parentElement && scrolls(el.parentElement) && main.contains(el.parentElement))) {
      held.add(el);
      continue;
    }
    const rect = el.getBoundingClientRect();
    if (rect.width === 0 && rect.height === 0) continue;
    if (rect.left < box.left - 1 || rect.right > box.right + 1) {
      found.push(`${describe(el)} spans x ${Math.round(rect.left)}..${Math.round(rect.right)} outside main's ${Math.round(box.left)}..${Math.round(box.right)}`);
      held.add(el);  // its children would say the same
    }
    if (found.length > 8) break;
  }
  // Text after a direction override keeps its place: the items of a head line stay in reading order.
  for (const container of document.querySelectorAll(bidiSelectors)) {
    const items = Array.from(container.children).filter((el) => el.getBoundingClientRect().width > 0);
    for (let i = 1; i < items.length; i++) {
      const a = items[i - 1].getBoundingClientRect();
      const b = items[i].getBoundingClientRect();
      const sameLine = a.top < b.bottom - 2 && b.top < a.bottom - 2;
      if (sameLine && b.left < a.left) {
        found.push(`${describe(items[i])} shows left of ${describe(items[i - 1])} in ${describe(container)}`);
      }
    }
  }
  return found.slice(0, 10);
}
"""

BIDI_SELECTORS = ".message-head, .tool-call-head, .injection-head, .tool-result-head, .fb-entry, .review-status"


@dataclass
class Browser:
    """A page that records and aborts every request to another host, and checks each page it opens.

    A sweep over many pages goes on past a failing one: every failure is collected with the payload and the page
    it happened on, and `assert_no_failures` reports them all at the end.
    """

    page: Any
    base_url: str
    problems: Problems
    foreign: list[tuple[str, str]] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    about: str = ""

    def __post_init__(self) -> None:
        # Only requests that do not go to the live server reach the handler (routing every request would also
        # turn the browser's cache off and slow each page down).
        others = re.compile(r"^(?!" + re.escape(self.base_url) + r"/)")

        def record_and_abort(route: Any) -> None:
            self.foreign.append((route.request.resource_type, route.request.url))
            route.abort()

        self.page.route(others, record_and_abort)

    def open(
        self, path: str, *, status: int = 200, allow_styles: bool = False, narrow: bool = False, layout: bool = True
    ) -> bool:
        """Open a page and check it; False (and a failure recorded) when anything is wrong."""
        started = time.monotonic()
        try:
            response = self.page.goto(self.base_url + path, wait_until="load")
            assert response is not None
            assert response.status == status, f"status {response.status}: {self.page.inner_text('body')[:300]}"
        except (AssertionError, PlaywrightError) as error:
            self.fail(path, error)
            return False
        ok = self.check(path, allow_styles=allow_styles, narrow=narrow, layout=layout)
        self.timings[path] = time.monotonic() - started
        return ok

    def check(self, where: str, *, allow_styles: bool = False, narrow: bool = False, layout: bool = True) -> bool:
        """Check the page as it is now; False (and a failure recorded) when anything is wrong."""
        page = self.page
        try:
            # Unfold everything (reasoning, payloads, raw JSON, results) so that all of it is laid out and loaded.
            page.evaluate("document.querySelectorAll('details').forEach((d) => { d.open = true; })")
            page.evaluate("() => new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 50)))")
            findings = page.evaluate(FINDINGS_JS, [allow_styles, hostile.MARKER_TAG])
            assert findings == [], findings
            if layout:
                overflow = page.evaluate(LAYOUT_JS, BIDI_SELECTORS)
                assert overflow == [], overflow
            if narrow:
                size = page.viewport_size
                page.set_viewport_size({"width": 390, "height": 844})
                try:
                    overflow = page.evaluate(LAYOUT_JS, BIDI_SELECTORS)
                    assert overflow == [], f"at 390px: {overflow}"
                finally:
                    page.set_viewport_size(size)
            self.assert_clean()
        except (AssertionError, PlaywrightError) as error:
            self.fail(where, error)
            return False
        return True

    def assert_clean(self) -> None:
        assert self.page.evaluate("window.__pwned") is None, "a payload ran: window.__pwned is set"
        assert self.problems.dialogs == [], f"a script opened dialogs: {self.problems.dialogs}"
        assert self.problems.page_errors == [], f"page errors: {self.problems.page_errors}"
        assert self.problems.csp_violations == [], f"CSP violations: {self.problems.csp_violations}"
        assert self.foreign == [], f"requests to other hosts: {self.foreign}"

    def expect(self, condition: bool, where: str, message: str) -> None:
        if not condition:
            self.fail(where, AssertionError(message))

    def fail(self, where: str, error: BaseException) -> None:
        self.failures.append(f"[{self.about}] {where[:160]}: {str(error)[:1500]}")
        # Reported once: the next page starts clean.
        for found in (self.problems.dialogs, self.problems.page_errors, self.problems.csp_violations, self.foreign):
            found.clear()

    def assert_no_failures(self) -> None:
        assert self.failures == [], f"{len(self.failures)} failures:\n" + "\n".join(self.failures)

    def sign_in_as(self, username: str) -> None:
        self.page.context.clear_cookies()
        sign_in(self.page, self.base_url, username)
        assert "/accounts/login/" not in self.page.url, f"{username} could not sign in"


@pytest.fixture
def inspector(page: Any, live_server: Any, problems: Problems) -> Iterator[Browser]:
    yield Browser(page, live_server.url, problems)


# --------------------------------------------------------------------------------------------------------------
# Every payload in every field, every page


@dataclass
class Stored:
    record_qa: Conversation
    chat_history: Conversation
    other_branch_leaf: Message
    final_answer: Message
    user_message: Message
    calls_message: Message
    result_message: Message
    label: Label
    feedback: Feedback
    audit_event: AuditEvent


def ingest_everywhere(payload: str, reviewer: User) -> Stored:
    """The payload in every field of hostile.FIELDS, through the API and the services."""
    source, _ = source_get_or_create(name=hostile.short(payload, 100))
    _, key = api_key_create(source=source, name=hostile.short(payload, 100))

    document = hostile.record_qa_document(payload, chat_id=f"hostile-{payload}")
    first = post(key, json.dumps(document))
    assert first.status_code == 201, first.content[:500]
    assert first.json()["format"] == "record_qa"
    branched = post(key, json.dumps(hostile.branch_variant(document, payload)))
    assert branched.status_code == 200 and branched.json()["outcome"] == "updated", branched.content[:500]
    history = post(key, json.dumps(hostile.chat_history_document(payload, conversation_id=f"history-{payload}")))
    assert history.status_code == 201, history.content[:500]
    assert history.json()["format"] == "chat_history"

    record_qa = Conversation.objects.get(uuid=first.json()["conversation"])
    chat_history = Conversation.objects.get(uuid=history.json()["conversation"])
    assert record_qa.branch_count == 1
    messages = Message.objects.filter(conversation=record_qa)
    final_answer = messages.filter(on_active_path=True).order_by("-depth").first()
    other_leaf = messages.filter(on_active_path=False).order_by("-depth").first()
    assert final_answer is not None and other_leaf is not None
    calls_message = messages.filter(tool_calls__isnull=False).distinct().get()
    result_message = messages.filter(role="tool", tool_call_id="call_broken").get()
    user_message = messages.filter(role="user").get()

    label = Label.objects.create(name=hostile.short(payload, 64), description=hostile.short(payload, 300))
    feedback, _ = feedback_submit(
        author=reviewer,
        conversation=record_qa,
        message=final_answer,
        score=-1,
        labels=[label],
        comment=payload,
        correction=payload,
    )
    feedback_submit(author=reviewer, conversation=record_qa, labels=[label], comment=payload)
    event = AuditEvent.objects.filter(target_id=str(feedback.uuid)).first()
    assert event is not None
    return Stored(
        record_qa=record_qa,
        chat_history=chat_history,
        other_branch_leaf=other_leaf,
        final_answer=final_answer,
        user_message=user_message,
        calls_message=calls_message,
        result_message=result_message,
        label=label,
        feedback=feedback,
        audit_event=event,
    )


def given_panel_holds_the_payload(inspector: Browser, where: str) -> None:
    """The "Given to the model" panel shows the payload's fields (hostile.record_qa_document): the prompts, the
    model's settings, the tools offered by the list and by function_names, the context's kinds and listed ids, and
    the injections judged, with the violations in words."""
    panel = inspector.page.locator("#given")
    shown = {
        "prompts": panel.locator(".given-prompt").count(),
        "settings": panel.locator(".given-overview .settings li").count(),
        "tools list": panel.locator("table.tools-offered").nth(0).locator("tbody tr").count(),
        "function_names": panel.locator("table.tools-offered").nth(1).locator("tbody tr").count(),
        "context kinds": panel.locator("table.context-kinds tbody tr").count(),
        "listed ids": panel.locator("table.context-ids tbody tr").count(),
        "scenario rows": panel.locator("details.given-part table.record-data", has_text="Scenario").count(),
    }
    expected = {
        "prompts": 3,  # the scenario's system message, the system and the developer messages
        "settings": 2,  # enable_thinking and the payload's own key
        "tools list": 3,
        "function_names": 2,
        "context kinds": 2,
        "listed ids": 3,
        "scenario rows": 1,
    }
    inspector.expect(shown == expected, where, f"the panel shows {shown}, not {expected}")
    verdicts = panel.locator("table.injections-judged").inner_text()
    inspector.expect("Policy violation: kind not enabled" in verdicts, where, f"the verdicts read {verdicts[:300]}")


@pytest.mark.browser
def test_every_payload_stays_inert_on_the_pages_that_show_them_all_side_by_side(
    inspector: Browser, reviewer: User, admin_user: User
) -> None:
    started = time.monotonic()
    for _, payload in hostile.cases():
        ingest_everywhere(payload, reviewer)
    ingested = time.monotonic() - started

    inspector.about = "all payloads"
    inspector.sign_in_as("rita")
    # Pages that show every payload at once: their rows and bars side by side.
    inspector.open("/")
    inspector.open("/conversations/", narrow=True)
    inspector.open("/artifacts/", narrow=True)
    inspector.sign_in_as("admin")
    for changelist in ["conversation", "source", "label", "feedback", "auditevent"]:
        inspector.open(f"/admin/chats/{changelist}/")
    inspector.open("/audit/", narrow=True)
    print(f"\n{len(hostile.PAYLOADS)} payloads ingested in {ingested:.1f}s, {len(inspector.timings)} pages checked")
    inspector.assert_no_failures()


# One test per payload (they spread over the parallel run's workers): the payload in every field, every page that
# shows one conversation, one artifact or one event.
@pytest.mark.browser
@pytest.mark.parametrize("name", list(hostile.PAYLOADS))
def test_a_payload_in_every_field_stays_inert_on_every_page_that_shows_it(
    inspector: Browser, reviewer: User, admin_user: User, name: str
) -> None:
    payload = hostile.PAYLOADS[name]
    item = ingest_everywhere(payload, reviewer)
    inspector.about = name

    inspector.sign_in_as("rita")
    thread = item.record_qa.get_absolute_url()
    query = urlencode({"q": hostile.short(payload, 200)})
    inspector.open(f"/conversations/?{query}")
    # The active branch at its final answer, with the form of its feedback swapped in by htmx (the payloads make
    # long messages: the thread comes in windows, and the permalink loads the one that holds the answer).
    if inspector.open(f"{thread}#m-{item.final_answer.pk}", narrow=True):
        given_panel_holds_the_payload(inspector, thread)
        block = inspector.page.locator(f"#fb-{item.final_answer.pk}")
        block.get_by_role("link", name="Edit your feedback").click()
        block.get_by_label("Corrected answer").wait_for()
        if inspector.check(f"{thread} with the feedback form open"):
            shown = (
                block.get_by_label("Comment").input_value(),
                block.get_by_label("Corrected answer").input_value(),
            )
            inspector.expect(shown == (payload, payload), thread, "the feedback broke out of its textareas")
    # The other branch, with the conversation's feedback form open (the way without JavaScript).
    if inspector.open(f"{thread}?at={item.other_branch_leaf.pk}&feedback=conversation"):
        shown = inspector.page.locator("#fb-conversation-comment").input_value()
        inspector.expect(shown == payload, thread, "the comment broke out of its textarea")
    inspector.open(item.chat_history.get_absolute_url(), narrow=True)
    # The payload as an artifact id: its page, its versions and their diff.
    if InjectedArtifact.objects.filter(artifact_id=payload).exists():
        inspector.open(reverse("chats:artifact_detail", args=[payload]), narrow=True)
    # The fragment htmx swaps in, opened on its own: a bare piece of HTML without the site's stylesheet, so its
    # layout is checked where it is shown (above), not here.
    inspector.open(f"/conversations/{item.record_qa.uuid}/feedback/form/?message={item.final_answer.pk}", layout=False)
    # The review queue, filtered by the payload, lands on a thread.
    if inspector.open(f"/conversations/next/?{query}"):
        inspector.expect("/next/" not in inspector.page.url, "next", "the queue did not open a conversation")

    inspector.sign_in_as("admin")
    # What an auditor reads: the thread with its Activity panel, and an event with its diff.
    inspector.open(thread, narrow=True)
    inspector.open(f"/audit/{item.audit_event.pk}/", narrow=True)
    of_conversation = f"conversation__id__exact={item.record_qa.pk}"
    for model in ["message", "toolcall", "injectedartifact"]:
        path = f"/admin/chats/{model}/?{of_conversation}"
        if inspector.open(path):
            rows = inspector.page.locator("#result_list tbody tr").count()
            inspector.expect(rows > 0 and "e=1" not in inspector.page.url, path, "the changelist shows no rows")
    for path in [
        f"/admin/chats/conversation/?{urlencode({'q': hostile.short(payload, 100)})}",
        f"/admin/chats/conversation/{item.record_qa.pk}/change/",
        f"/admin/chats/conversation/{item.chat_history.pk}/change/",
        f"/admin/chats/message/{item.user_message.pk}/change/",
        f"/admin/chats/message/{item.calls_message.pk}/change/",
        f"/admin/chats/message/{item.result_message.pk}/change/",
        f"/admin/chats/label/{item.label.pk}/change/",
        f"/admin/chats/feedback/{item.feedback.pk}/change/",
        f"/admin/chats/auditevent/{item.audit_event.pk}/change/",
    ]:
        inspector.open(path)
    report_timings(name, inspector)
    inspector.assert_no_failures()


# --------------------------------------------------------------------------------------------------------------
# Deep JSON shows on every page; the 10 MB message


@pytest.mark.browser
@pytest.mark.parametrize("where", hostile.DEEP_PLACES)
def test_deep_json_is_stored_and_shown_on_every_page(
    inspector: Browser, ingest_key: str, reviewer: User, admin_user: User, where: str
) -> None:
    # Stored whole wherever it is (tests/security/test_hostile_input_api.py checks that the API gives it back).
    response = post(ingest_key, hostile.deep_document(hostile.DEEP, where, conversation_id=f"deep-{where}"))
    assert response.status_code == 201 and response.json()["outcome"] == "created", response.content[:300]
    conversation = Conversation.objects.get(uuid=response.json()["conversation"])
    inspector.sign_in_as("rita")
    inspector.open(conversation.get_absolute_url())
    inspector.sign_in_as("admin")
    inspector.open(f"/admin/chats/conversation/{conversation.pk}/change/")
    for message in Message.objects.filter(conversation=conversation):
        inspector.open(f"/admin/chats/message/{message.pk}/change/")
    inspector.assert_no_failures()


TEN_MB = 10 * 1024 * 1024


def ingest_ten_megabytes(key: str) -> tuple[Conversation, Message, float]:
    """A conversation whose answer is one unbroken word of 10 MiB (a 10 MiB body, under the 32 MiB limit)."""
    document = {
        "conversation_id": "ten-megabytes",
        "chat_history": [
            {"role": "user", "content": "Say W ten million times."},
            {"role": "assistant", "content": "W" * TEN_MB},
        ],
    }
    started = time.monotonic()
    response = post(key, json.dumps(document))
    seconds = time.monotonic() - started
    assert response.status_code == 201, response.content[:300]
    conversation = Conversation.objects.get(uuid=response.json()["conversation"])
    answer = Message.objects.get(conversation=conversation, role="assistant")
    assert len(answer.text) == TEN_MB
    return conversation, answer, seconds


def report_timings(what: str, inspector: Browser) -> None:
    print(f"\n{what}: " + ", ".join(f"{path[:60]} {seconds:.1f}s" for path, seconds in inspector.timings.items()))


@pytest.mark.browser
def test_a_ten_megabyte_message_is_stored_listed_and_shown_in_the_admin(
    inspector: Browser, ingest_key: str, reviewer: User, admin_user: User
) -> None:
    conversation, answer, seconds = ingest_ten_megabytes(ingest_key)
    inspector.page.set_default_timeout(120_000)
    inspector.sign_in_as("rita")
    inspector.open("/conversations/")
    inspector.open("/conversations/?" + urlencode({"q": "W" * 200}))
    inspector.sign_in_as("admin")
    inspector.open(f"/admin/chats/conversation/{conversation.pk}/change/")
    # The whole text, three times (text, parts, raw): about 31 MB of HTML.
    inspector.open(f"/admin/chats/message/{answer.pk}/change/")
    report_timings(f"10 MiB message (ingested in {seconds:.1f}s)", inspector)
    inspector.assert_no_failures()


@pytest.mark.browser
def test_a_ten_megabyte_message_shows_on_its_thread_without_overflow(
    inspector: Browser, ingest_key: str, reviewer: User
) -> None:
    conversation, _, _ = ingest_ten_megabytes(ingest_key)
    inspector.page.set_default_timeout(120_000)
    inspector.sign_in_as("rita")
    inspector.open(conversation.get_absolute_url())
    report_timings("10 MiB message on its thread", inspector)
    inspector.assert_no_failures()
    # The page shows the start of the message and says where it was cut; the API still serves all of it.
    assert inspector.page.locator(".shortened").first.inner_text().startswith("Shown: the first 100,000 of")


@pytest.mark.browser
def test_the_api_docs_page_loads_nothing_from_elsewhere(inspector: Browser, reviewer: User) -> None:
    inspector.sign_in_as("rita")
    inspector.open("/api/v1/docs/", allow_styles=True)
    inspector.page.get_by_text("Masterbrain Chat Audit API").first.wait_for()
    inspector.check("/api/v1/docs/ after Swagger UI drew it", allow_styles=True)
    inspector.assert_no_failures()
