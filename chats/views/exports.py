"""Export jobs pages: a person's export jobs with their progress (refreshed in place while one is under way), and
asking for one from the conversation list's one "Export…" control ("Run as a job"; its "Download now" is sent on to
the export API's URL with the same filters).

For every reading role, as the export itself (`GET /api/v1/export/`); each person sees only the jobs they asked
for, whatever their role (see `chats.api.export_job_views`). The job's download is the API's
(`/api/v1/export/jobs/<uuid>/download/`), which a session reads too.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from chats.errors import InvalidInput
from chats.filters.exports import ExportFilter
from chats.models import JobState
from chats.selectors.export_jobs import export_jobs_of
from chats.selectors.exports import BULK_EXPORT_FORMATS
from chats.services.export_jobs import export_job_create as job_create
from chats.views.common import actor, is_htmx, reviewer_page

# The page shows a person's newest jobs; the API lists them all, page by page.
PAGE_JOBS = 50
# While a job is queued or running, the list asks for itself again this often (htmx).
REFRESH_EVERY = "2s"


class ExportJobForm(forms.Form):
    format = forms.ChoiceField(choices=[(name, name) for name in BULK_EXPORT_FORMATS])
    envelope = forms.BooleanField(required=False)
    # The list's one "Export…" control: "now" is the synchronous download (the export API, GET), "job" a job.
    run = forms.ChoiceField(choices=[("job", "as a job"), ("now", "now")], required=False)


@require_GET
@reviewer_page()
def export_jobs(request: HttpRequest) -> HttpResponse:
    jobs = list(export_jobs_of(user=actor(request), source=None)[:PAGE_JOBS])
    context = {
        "jobs": jobs,
        "under_way": any(job.state in (JobState.QUEUED, JobState.RUNNING) for job in jobs),
        "refresh_every": REFRESH_EVERY,
        "active_nav": "exports",
    }
    template = "chats/_export_jobs.html" if is_htmx(request) else "chats/export_jobs.html"
    return render(request, template, context, using="jinja2")


@require_POST
@reviewer_page()
def export_job_create(request: HttpRequest) -> HttpResponse:
    form = ExportJobForm(request.POST)
    if not form.is_valid():
        raise InvalidInput(
            [{"path": f"/{name}", "message": " ".join(map(str, errors))} for name, errors in form.errors.items()]
        )
    filters = {name: values for name in ExportFilter.base_filters if (values := request.POST.getlist(name))}
    if form.cleaned_data["run"] == "now":
        # The same export, downloaded now: the export API's URL with these filters (it audits the export itself).
        query = [(name, value) for name, values in filters.items() for value in values]
        query += [("format", form.cleaned_data["format"])]
        query += [("envelope", "true")] if form.cleaned_data["envelope"] else []
        return HttpResponseRedirect(f"{reverse('api:export')}?{urlencode(query)}", status=303)
    job = job_create(
        actor=actor(request),
        requested_by=actor(request),
        format=form.cleaned_data["format"],
        envelope=form.cleaned_data["envelope"],
        filters=filters,
    )
    messages.success(request, f"Export job started ({job.format}): it is listed below.")
    return redirect("chats:export_jobs")
