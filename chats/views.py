from django.http import HttpRequest, HttpResponse


def home(request: HttpRequest) -> HttpResponse:
    return HttpResponse("Masterbrain Chat Audit")


def thread(request: HttpRequest, uuid: str) -> HttpResponse:
    return HttpResponse(str(uuid))
