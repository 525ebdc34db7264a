"""The sign-in page."""

from __future__ import annotations

from django.contrib.auth import views as auth_views

from chats.forms import SignInForm


class SignInView(auth_views.LoginView):
    """Django's sign-in. Failed attempts are counted by django-axes per user name and address; a locked-out one
    answers 429 (see chats/throttling.py)."""

    authentication_form = SignInForm
    template_engine = "jinja2"
