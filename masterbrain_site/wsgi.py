import gc
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "masterbrain_site.settings")
application = get_wsgi_application()

# What the application loaded (modules, settings, URL patterns, templates) lives as long as the process: moved out of
# the cyclic collector's generations, so that its full collections walk what requests allocate, not all of it
# again each time (about a tenth of a bulk request's CPU went to those walks).
gc.freeze()
