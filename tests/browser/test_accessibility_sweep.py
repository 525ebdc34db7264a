"""The accessibility sweep: axe on every kind of page, over every demo thread, in the light and the dark theme.

The pages come from the URLconf and the demo data (`manage.py seed_demo`): every named page of the site is either
swept or excluded here with a reason (test_every_named_page_is_swept_or_excluded), so a new page joins the sweep
or says why not. A violation of impact serious or critical fails; lesser ones fail too unless ALLOWED names them
with a reason, and every one found is printed.
"""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from chats.models import AuditEvent, Conversation, InjectedArtifact, Queue
from chats.services.export_jobs import export_job_create
from chats.services.review import queue_add_conversations
from chats.services.saved_views import saved_view_create
from tests.browser.conftest import PASSWORD
from tests.factories.review import make_queue

# The dark theme changes colours only: there axe checks the rules about colour; the light pass checks them all.
THEMES: dict[str, tuple[str, ...]] = {"light": (), "dark": ("color-contrast", "link-in-text-block")}

# Named URL patterns of the site (the admin and the API apart) that are not pages one reads.
EXCLUDED: dict[str, str] = {
    "logout": "a POST that signs out and redirects",
    "chats:next_unreviewed": "redirects to a thread, which is swept",
    "chats:feedback_save": "a POST answering with the feedback fragment the thread shows",
    "chats:feedback_form": "an htmx fragment; the thread with the form open is swept",
    "chats:thread_messages": "a chunk of the thread's list items, which the thread inserts; every thread is swept",
    "chats:feedback_delete": "a POST answering with a fragment",
    "chats:review_status": "a POST answering with the status fragment the thread shows",
    "chats:active_branch": "a POST that redirects to the thread",
    "chats:audit_export": "a download (NDJSON), not a page",
    "chats:queue_create": "a POST; its form is on the queue list, which is swept",
    "chats:queue_update": "a POST; its form is on the queue's page, which is swept",
    "chats:queue_next": "a POST that leases an item and redirects to its page, which is swept",
    "chats:queue_assign": "a POST that redirects to the queue's page",
    "chats:review_draft": "a POST answering with the draft status fragment",
    "chats:review_submit": "a POST that redirects to the item's page",
    "chats:item_resolve": "a POST that redirects to the adjudication page",
    "chats:queue_add": "a POST that redirects to the list",
    "chats:export_job_create": "a POST that starts an export job and redirects to the job list, which is swept",
    "chats:saved_view_create": "a POST that saves a view and redirects to the list with its filters, which is swept",
    "chats:saved_view_share": "a POST that redirects to the saved views page, which is swept",
    "chats:saved_view_delete": "a POST that redirects to the saved views page, which is swept",
    "chats:saved_view_menu": "the navigation's Views menu, a fragment: the sweep opens it on the saved views page",
}

# Named pages of the site the sweep opens (swept_pages, and the sign-in page), as the browser test checks.
SWEPT = {
    "login",
    "chats:home",
    "chats:trends",
    "chats:conversation_list",
    "chats:thread",
    "chats:artifact_list",
    "chats:artifact_detail",
    "chats:audit_list",
    "chats:audit_event",
    "chats:queue_list",
    "chats:queue_detail",
    "chats:queue_adjudicate",
    "chats:queue_item",
    "chats:export_jobs",
    "chats:saved_view_list",
}

# Findings below serious that the pages keep, by axe rule id, with the reason.
ALLOWED: dict[str, str] = {}


def site_page_names() -> set[str]:
    """Every named pattern of the URLconf outside the admin and the API: the API answers JSON, not pages, and the
    admin's pages are Django's few templates over every model, which its index, a changelist and a change form
    (swept_pages) stand for."""
    names: set[str] = set()

    def walk(patterns: list[Any], namespace: str) -> None:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                if pattern.namespace in ("admin",) or str(pattern.pattern).startswith("api/"):
                    continue
                inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
                walk(pattern.url_patterns, inner)
            elif isinstance(pattern, URLPattern) and pattern.name:
                names.add(f"{namespace}{pattern.name}")

    walk(get_resolver().url_patterns, "")
    return names


def swept_pages(conversations: list[Conversation], queue: Queue) -> Iterator[tuple[str, str]]:
    """(URL name, path) of every page the sweep opens, signed in as a superuser."""
    first = conversations[0]
    yield "chats:home", reverse("chats:home")
    # The weeks and the days up to the demo's latest conversation, so that every chart has points (and links).
    latest = max(conversation.last_activity_at for conversation in conversations).date().isoformat()
    yield "chats:trends", reverse("chats:trends") + f"?date_to={latest}"
    yield "chats:trends", reverse("chats:trends") + f"?bucket=day&date_to={latest}"
    yield "chats:conversation_list", reverse("chats:conversation_list")
    yield "chats:conversation_list", reverse("chats:conversation_list") + "?has_tool_calls=true&status=unreviewed"
    yield "chats:conversation_list", reverse("chats:conversation_list") + "?q=PCR"
    for conversation in conversations:
        yield "chats:thread", conversation.get_absolute_url()
    yield "chats:artifact_list", reverse("chats:artifact_list")
    for artifact_id in (
        InjectedArtifact.objects.order_by("artifact_id").values_list("artifact_id", flat=True).distinct()[:3]
    ):
        yield "chats:artifact_detail", reverse("chats:artifact_detail", args=[artifact_id])
    yield "chats:audit_list", reverse("chats:audit_list")
    event = AuditEvent.objects.filter(action__startswith="feedback").order_by(
        "-id"
    ).first() or AuditEvent.objects.latest("id")
    yield "chats:audit_event", reverse("chats:audit_event", args=[event.pk])
    yield "chats:queue_list", reverse("chats:queue_list")
    yield "chats:queue_detail", reverse("chats:queue_detail", args=[queue.pk])
    yield "chats:queue_adjudicate", reverse("chats:queue_adjudicate", args=[queue.pk])
    item = queue.items.order_by("id").first()
    assert item is not None
    yield "chats:queue_item", reverse("chats:queue_item", args=[queue.pk, item.pk])
    yield "chats:export_jobs", reverse("chats:export_jobs")
    yield "chats:saved_view_list", reverse("chats:saved_view_list")
    yield "admin:index", reverse("admin:index")
    yield "admin:chats_conversation_changelist", reverse("admin:chats_conversation_changelist")
    yield "admin:chats_conversation_change", reverse("admin:chats_conversation_change", args=[first.pk])


def test_every_named_page_is_swept_or_excluded() -> None:
    assert site_page_names() == SWEPT | set(EXCLUDED)
    assert SWEPT.isdisjoint(EXCLUDED)


def axe_script() -> str:
    from axe_playwright_python.base import AXE_SCRIPT

    return str(AXE_SCRIPT)


def axe_findings(page: Any, rules: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """axe's violations on the page as it is (axe is loaded by the context's init script)."""
    options: dict[str, Any] = {"resultTypes": ["violations"]}
    if rules:
        options["runOnly"] = {"type": "rule", "values": list(rules)}
    return list(page.evaluate("(options) => axe.run(document, options).then((r) => r.violations)", options))


def describe(url: str, theme: str, violation: dict[str, Any]) -> str:
    targets = [node["target"] for node in violation["nodes"][:3]]
    summary = violation["nodes"][0].get("failureSummary", "").replace("\n", " ")[:200]
    return f"{theme} {url}: {violation['id']} ({violation['impact']}) {violation['help']} {targets} {summary}"


# Every folded part open (tool results, payloads, reasoning, the "Given to the model" panel), so that axe reads it.
# The navigation's menu loads its fragment when opened: the sweep opens it on one page, and waits for it (open_menu).
UNFOLD = "document.querySelectorAll('details:not(.nav-menu details)').forEach((d) => { d.open = true; })"


def open_menu(page: Any) -> None:
    """Open the navigation's Views menu and wait for its fragment (the saved views, as links)."""
    page.locator(".nav-menu summary").click()
    page.locator(".nav-menu-items a[data-view]").first.wait_for()


# A theme switched on a loaded page starts the admin's colour transitions: axe reads the colours they end on.
SETTLE = "document.getAnimations().forEach((a) => a.finish())"
# The page's outline: its landmarks and the levels of its headings, in order.
OUTLINE = """() => ({
  banners: document.querySelectorAll('body > header, [role=banner]').length,
  mains: document.querySelectorAll('main, [role=main]').length,
  levels: Array.from(document.querySelectorAll('h1, h2, h3, h4, h5, h6')).map((h) => Number(h.tagName[1])),
})"""


@dataclass
class Sweep:
    failures: list[str] = field(default_factory=list)
    lesser: list[str] = field(default_factory=list)
    pages: int = 0

    def check(self, page: Any, name: str, path: str, theme: str, rules: tuple[str, ...]) -> None:
        page.evaluate(UNFOLD)
        self.pages += 1
        for violation in axe_findings(page, rules):
            line = describe(path, theme, violation)
            if violation["impact"] in ("serious", "critical"):
                self.failures.append(line)
            elif violation["id"] not in ALLOWED:
                self.lesser.append(line)
        if not rules and not name.startswith("admin:"):
            outline = page.evaluate(OUTLINE)
            levels = outline["levels"]
            if (outline["banners"], outline["mains"], levels[:1], levels.count(1)) != (1, 1, [1], 1) or any(
                b > a + 1 for a, b in pairwise(levels)
            ):
                self.failures.append(f"{theme} {path}: landmarks or headings out of order: {outline}")


# The pages are swept in shards, one test each, so that a parallel run spreads them over its workers; each shard
# seeds the same demo data and sweeps every SHARDS-th page of the same list.
SHARDS = 4


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("shard", range(SHARDS))
def test_axe_finds_nothing_on_any_page_in_either_theme(
    browser: Any, live_server: Any, admin_user: User, reviewer: User, shard: int
) -> None:
    started = time.monotonic()
    call_command("seed_demo", stdout=io.StringIO())
    conversations = list(Conversation.objects.order_by("id"))
    assert len(conversations) >= 40
    queue = make_queue(admin_user, [admin_user, reviewer], reviews_per_item=1, name="Sweep")
    queue_add_conversations(
        actor=admin_user,
        queue=queue,
        conversations=Conversation.objects.filter(pk__in=[c.pk for c in conversations[:3]]),
    )
    export_job_create(actor=admin_user, requested_by=admin_user, format="openai", filters={"status": ["unreviewed"]})
    saved_view_create(
        actor=admin_user, name="Unreviewed with tool calls", query="has_tool_calls=true&status=unreviewed"
    )
    pages = list(swept_pages(conversations, queue))
    assert {name for name, _ in pages if not name.startswith("admin:")} | {"login"} == SWEPT
    seeded = time.monotonic()

    # One context and one page: each page is loaded once, checked in the light theme, then in the dark one.
    sweep = Sweep()
    context = browser.new_context(viewport={"width": 1400, "height": 900}, color_scheme="light")
    context.add_init_script(script=axe_script())
    page = context.new_page()

    def check(name: str, path: str) -> None:
        for theme, rules in THEMES.items():
            page.emulate_media(color_scheme=theme)
            page.evaluate(SETTLE)
            sweep.check(page, name, path, theme, rules)
        page.emulate_media(color_scheme="light")

    page.goto(f"{live_server.url}/accounts/login/")
    if shard == 0:
        check("login", "/accounts/login/")
    page.get_by_label("Username").fill("admin")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_load_state("domcontentloaded")
    for name, path in pages[shard::SHARDS]:
        response = page.goto(f"{live_server.url}{path}")
        assert response is not None and response.ok, f"{path}: {response and response.status}"
        if name == "chats:saved_view_list":
            open_menu(page)
        check(name, path)
    context.close()
    took = time.monotonic() - seeded
    print(
        f"\naxe sweep, shard {shard + 1} of {SHARDS}: {sweep.pages} pages, seeding {seeded - started:.1f} s, sweep {took:.1f} s"
    )
    for line in sweep.failures + sweep.lesser:
        print(line)
    assert sweep.failures == []
    assert sweep.lesser == []
