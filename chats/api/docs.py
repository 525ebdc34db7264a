"""The browsable API docs: Swagger UI from static/ (drf-spectacular-sidecar), under the site's strict CSP.

The split view serves Swagger UI's start-up script as a file of its own, so `script-src 'self'` holds with no
inline script. Swagger UI styles its widgets with inline `style` attributes, which only this page allows.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpResponseBase
from django.utils.csp import CSP
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularSwaggerSplitView
from rest_framework.request import Request


class SwaggerDocsView(SpectacularSwaggerSplitView):
    @extend_schema(exclude=True)
    def get(self, request: Request, *args: object, **kwargs: object) -> HttpResponseBase:
        response: HttpResponseBase = super().get(request, *args, **kwargs)  # type: ignore[no-untyped-call]
        policy: dict[str, Any] = dict(settings.SECURE_CSP)
        policy["style-src"] = [*list(policy.get("style-src") or [CSP.SELF]), CSP.UNSAFE_INLINE]
        response._csp_config = policy  # type: ignore[attr-defined]  # read by the CSP middleware, not declared
        return response
