"""One settings module; everything that differs between machines comes from the environment.

Embedded defaults (no variables set): SQLite file in the project folder, media in
./media, Celery tasks run eagerly in-process. DATABASE_URL, REDIS_URL and the S3
variables switch to PostgreSQL, Redis and S3-compatible storage.
"""
import os
import tempfile
from pathlib import Path

import dj_database_url

from config.env import ConfigurationError, env_bool, env_int, env_list, env_str, env_url

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = env_bool("DEBUG", True)
SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ConfigurationError("SECRET_KEY must be set when DEBUG is false")
    SECRET_KEY = "development-only-secret-key-do-not-use-in-production"
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "accounts",
    "annotation",
    "ratings",
    "metrics_bridge",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "accounts.context_processors.roles",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------
DATABASE_URL = env_url("DATABASE_URL", schemes={"sqlite", "postgres", "postgresql"})
if DATABASE_URL:
    try:
        DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)}
    except ValueError as error:
        raise ConfigurationError(f"DATABASE_URL is malformed: {error}") from None
else:
    DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": BASE_DIR / "db.sqlite3"}}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Imports and metric runs write many rows; wait for a lock instead of failing at once.
    DATABASES["default"].setdefault("OPTIONS", {})["timeout"] = 30
    # A file, not memory, so a Celery worker process started by a test sees the test database.
    # One file per test process, so parallel test runs don't share it.
    DATABASES["default"]["TEST"] = {"NAME": str(Path(tempfile.gettempdir()) / f"captioneval-test-{os.getpid()}.sqlite3")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Storage --------------------------------------------------------------
MEDIA_ROOT = Path(env_str("MEDIA_ROOT") or BASE_DIR / "media")
MEDIA_URL = "/media/"
STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]

AWS_STORAGE_BUCKET_NAME = env_str("AWS_STORAGE_BUCKET_NAME")
AWS_S3_ENDPOINT_URL = env_url("AWS_S3_ENDPOINT_URL", schemes={"http", "https"}) or None
AWS_ACCESS_KEY_ID = env_str("AWS_ACCESS_KEY_ID")
AWS_SECRET_ACCESS_KEY = env_str("AWS_SECRET_ACCESS_KEY")
AWS_S3_REGION_NAME = env_str("AWS_S3_REGION_NAME") or None
AWS_QUERYSTRING_EXPIRE = env_int("AWS_QUERYSTRING_EXPIRE", 3600, minimum=60)
AWS_QUERYSTRING_AUTH = True
AWS_S3_SIGNATURE_VERSION = "s3v4"
AWS_DEFAULT_ACL = None
USES_S3_STORAGE = bool(AWS_STORAGE_BUCKET_NAME)
if USES_S3_STORAGE and not (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY):
    raise ConfigurationError("AWS_STORAGE_BUCKET_NAME is set but AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY are not")

STORAGES = {
    "default": {
        "BACKEND": "storages.backends.s3.S3Storage" if USES_S3_STORAGE else "django.core.files.storage.FileSystemStorage",
    },
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage" if not DEBUG else "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# Uploaded workbooks and audio are kept even when their import fails (for later inspection).
FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = 20 * 1024 * 1024

# --- Celery ---------------------------------------------------------------
REDIS_URL = env_url("REDIS_URL", schemes={"redis", "rediss"})
if REDIS_URL:
    CELERY_BROKER_URL = REDIS_URL
    CELERY_RESULT_BACKEND = REDIS_URL
    CELERY_TASK_ALWAYS_EAGER = False
else:
    # No broker: tasks run in the calling process so metric runs still finish.
    CELERY_BROKER_URL = "memory://"
    CELERY_RESULT_BACKEND = "cache+memory://"
    CELERY_TASK_ALWAYS_EAGER = True
    CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 3600, minimum=10)
CELERY_TASK_SOFT_TIME_LIMIT = CELERY_TASK_TIME_LIMIT - 5
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600, minimum=5)}
# Fault-injection knob for crash-recovery tests: pause before scoring each chunk. Keep 0 in production.
METRICS_CHUNK_DELAY_SECONDS = env_int("METRICS_CHUNK_DELAY_MS", 0, minimum=0) / 1000
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]

# --- Auth, REST -----------------------------------------------------------
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "annotation:home"
LOGOUT_REDIRECT_URL = "login"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 8}},
]

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.TokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Audio caption evaluation API",
    "DESCRIPTION": "Corpus, human judgements and automatic metrics for audio captions.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    # Swagger UI / Redoc assets come from drf-spectacular-sidecar: the machines have no CDN access.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Several models have a `status` / `choice` enum; name them so the schema is unambiguous.
    "ENUM_NAME_OVERRIDES": {
        "ExpertAnnotationStatusEnum": "annotation.models.ExpertAnnotation.Status",
        "MetricRunStatusEnum": "metrics_bridge.models.MetricRun.Status",
        "PairChoiceEnum": "ratings.models.CaptionPair.Choice",
        "AnnotationSkipReasonEnum": "annotation.models.AnnotationTask.SkipReason",
    },
}

# --- Product settings -----------------------------------------------------
# Raters must redo the headphone screening after this many days.
HEADPHONE_CHECK_VALID_DAYS = env_int("HEADPHONE_CHECK_VALID_DAYS", 30, minimum=1)
# Submit unlocks after the clip played to its end, or after this many seconds of listening (0 = to the end).
MUST_LISTEN_SECONDS = env_int("MUST_LISTEN_SECONDS", 0, minimum=0)
# Largest uncompressed size accepted for an uploaded workbook (zip-bomb guard).
WORKBOOK_MAX_UNCOMPRESSED_BYTES = env_int("WORKBOOK_MAX_UNCOMPRESSED_BYTES", 200 * 1024 * 1024, minimum=1024)
# Optional OpenAI-compatible endpoint for LLM judges and the LLM X-ACE extractor.
LLM_API_BASE = env_url("LLM_API_BASE", schemes={"http", "https"})
LLM_API_KEY = env_str("LLM_API_KEY")
LLM_MODEL = env_str("LLM_MODEL")
SPICE_CORENLP_DIR = env_str("SPICE_CORENLP_DIR")
FENSE_ERROR_DETECTOR_PATH = env_str("FENSE_ERROR_DETECTOR_PATH")

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL") or "WARNING"},
}
