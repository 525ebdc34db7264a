"""The site's URLs and handlers, with two views that fail as no real view should: only for tests/api/test_errors.py,
which selects it with `@pytest.mark.urls`."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.urls import path
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from masterbrain_site.urls import handler404, handler500
from masterbrain_site.urls import urlpatterns as site_urlpatterns


class RaisingApiView(APIView):
    permission_classes: list[type] = []
    authentication_classes: list[type] = []

    def get(self, request: Request) -> Response:
        raise RuntimeError("a bug in an API view")


def raising_page(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("a bug in a plain view")


urlpatterns = [
    path("api/v1/test-raise/", RaisingApiView.as_view()),
    path("api/v1/test-raise-plain/", raising_page),
    path("test-raise-page/", raising_page),
    *site_urlpatterns,
]

__all__ = ["handler404", "handler500", "urlpatterns"]
