from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from chats.forms import AdminSignInForm
from chats.views.signin import SignInView

# The admin's sign-in explains a lockout like the site's own; django-axes counts both (see chats/throttling.py).
admin.site.login_form = AdminSignInForm

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", include("chats.api.urls")),
    path("accounts/login/", SignInView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", include("chats.urls")),
]

# Under /api/ both answer the API's error shape (chats.api.errors); elsewhere Django's pages.
handler404 = "chats.api.errors.page_not_found"
handler500 = "chats.api.errors.server_error"
