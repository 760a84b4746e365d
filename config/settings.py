"""One settings module; everything that differs between machines comes from the environment.

Embedded defaults (no variables set): SQLite file in the project folder, media in
./media, Celery on an embedded broker (kombu's filesystem transport made atomic, no server) that
`./scripts/run` starts a worker for. DATABASE_URL, REDIS_URL and the S3 variables switch
to PostgreSQL, Redis and S3-compatible storage. With DEBUG off the deployment settings
are strict by default (see "Deployment security" in docs/operations.md).
"""

import os
import tempfile
import warnings
from datetime import timedelta
from pathlib import Path

import dj_database_url

from common.broker import EMBEDDED_BROKER_URL, embedded_broker_folder, embedded_broker_options
from common.client_address import trusted_networks_parse
from config.env import ConfigurationError, env_bool, env_int, env_list, env_str, env_url
from config.secret_key import secret_key_problem

BASE_DIR = Path(__file__).resolve().parent.parent

# pydub warns when it is imported on a machine without a system ffmpeg; the product decodes audio with the
# ffmpeg the imageio-ffmpeg package ships (corpus/services/ffmpeg.py), so the warning is noise.
warnings.filterwarnings("ignore", message="Couldn't find ffmpeg or avconv", category=RuntimeWarning)

DEBUG = env_bool("DEBUG", True)
SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY and DEBUG:
    SECRET_KEY = "development-only-secret-key-do-not-use-in-production"
if not DEBUG and (problem := secret_key_problem(SECRET_KEY)):
    raise ConfigurationError(
        f"SECRET_KEY {problem} (DEBUG is false); generate one with: "
        "python -c 'import secrets; print(secrets.token_urlsafe(50))'"
    )
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

# --- Deployment security --------------------------------------------------
# Strict whenever DEBUG is off; each switch can be turned off by environment, e.g. behind a
# TLS-terminating proxy that already redirects to https (SECURE_SSL_REDIRECT=false) or on a
# loopback test stack without TLS. `check --deploy` then names what was switched off.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
# Health checks come over plain HTTP from inside the compose network.
SECURE_REDIRECT_EXEMPT = [r"^healthz/?$"]
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31_536_000, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", not DEBUG)
# The header's `preload` flag only consents to the browsers' preload list; nothing is listed until the
# domain's owner submits it. Off for a host whose subdomains are not all on https.
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", not DEBUG)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG)
# Only behind a proxy that sets X-Forwarded-Proto itself (and strips it from clients): otherwise a
# client could claim https and skip the redirect.
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("TRUST_X_FORWARDED_PROTO", False) else None
# Proxies (addresses or networks) whose X-Forwarded-For names the client: per-address limits (sign-in lockout,
# crowd-study arrivals) count the address common.client_address finds, not the proxy's. Empty: REMOTE_ADDR only.
try:
    TRUSTED_PROXIES = trusted_networks_parse(env_list("TRUSTED_PROXIES", []))
except ValueError as error:
    raise ConfigurationError(str(error)) from None
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
SECURE_REFERRER_POLICY = "same-origin"

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
    "axes",
    "accounts",
    "corpus",
    "annotation",
    "ratings",
    "metrics_bridge",
    "demo",
]

MIDDLEWARE = [
    # First: answers /healthz before host validation and the https redirect (probes use plain HTTP and an IP).
    "config.healthz.HealthCheckMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # The study window opened from MTurk's frame keeps its opener (its end page tells the frame): see the module.
    "ratings.middleware.StudyWindowOpenerMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes requires: turns a locked-out login into its 429 page.
    "axes.middleware.AxesMiddleware",
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
                "config.context_processors.simulated_study",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------
DATABASE_URL = env_url("DATABASE_URL", schemes={"sqlite", "postgres", "postgresql"})
if DATABASE_URL:
    try:
        # Persistent connections, checked before reuse: a connection the server dropped (restart, terminated
        # backend) is replaced instead of failing the next request.
        DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60, conn_health_checks=True)}
    except ValueError as error:
        raise ConfigurationError(f"DATABASE_URL is malformed: {error}") from None
else:
    DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": BASE_DIR / "db.sqlite3"}}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            # Imports and metric runs write many rows; wait for a lock (busy timeout, s) instead of failing at once.
            "timeout": 30,
            # Writers take the lock when their transaction begins: a deferred transaction that reads and then
            # writes cannot wait for another writer (SQLite answers "database is locked" at once), so two
            # simultaneous submits of one item would give a 500 instead of one success and one clear 409.
            "transaction_mode": "IMMEDIATE",
            # Readers don't block the writer and vice versa.
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL",
        }
    )
    # A file, not memory, so a Celery worker process started by a test sees the test database.
    # One file per test process, so parallel test runs don't share it.
    test_database = Path(tempfile.gettempdir()) / f"captioneval-test-{os.getpid()}.sqlite3"
    DATABASES["default"]["TEST"] = {"NAME": str(test_database)}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Storage --------------------------------------------------------------
MEDIA_ROOT = Path(env_str("MEDIA_ROOT") or BASE_DIR / "media")
MEDIA_URL = "/media/"
STATIC_URL = "/static/"
STATIC_ROOT = Path(env_str("STATIC_ROOT") or BASE_DIR / "staticfiles")
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
        "BACKEND": "storages.backends.s3.S3Storage"
        if USES_S3_STORAGE
        else "django.core.files.storage.FileSystemStorage",
    },
    # Hashed names in production (config/static_storage.py: whitenoise serves them as immutable, so a returning
    # page costs no static request); plain names under DEBUG, where runserver serves the sources as they change.
    "staticfiles": {
        "BACKEND": "config.static_storage.HashedStaticFilesStorage"
        if not DEBUG
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
# Uploaded workbooks and audio are kept even when their import fails (for later inspection).
FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = 20 * 1024 * 1024

# --- Celery ---------------------------------------------------------------
REDIS_URL = env_url("REDIS_URL", schemes={"redis", "rediss"})
if REDIS_URL:
    CELERY_BROKER_URL = REDIS_URL
    CELERY_RESULT_BACKEND = REDIS_URL
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600, minimum=5)}
else:
    # Embedded broker: messages are files in a folder of this database's, written aside and renamed in, claimed
    # by renaming (common/broker.py, common/broker_transport.py: none is lost, none taken by two workers); a real
    # worker process consumes them (./scripts/run starts one, `compute_metrics --wait` starts a temporary
    # one when none is alive). Nothing runs eagerly unless a test asks for it.
    CELERY_BROKER_DIR = Path(
        env_str("CELERY_BROKER_DIR") or embedded_broker_folder(database=DATABASES["default"], base_dir=BASE_DIR)
    )
    CELERY_BROKER_URL = EMBEDDED_BROKER_URL
    CELERY_BROKER_TRANSPORT_OPTIONS = embedded_broker_options(CELERY_BROKER_DIR)
    CELERY_RESULT_BACKEND = None
# Tasks report through the database (chunk rows), never through results.
CELERY_TASK_IGNORE_RESULT = True

# --- Cache shared by every process ------------------------------------------
# Web processes and workers must see the same entries (a per-process memory cache would be filled once per
# gunicorn worker and after every recycle): Redis when REDIS_URL is set, else a table of the database (created
# by metrics_bridge's migration 0008, so `migrate` is all a new install runs).
if REDIS_URL:
    CACHES = {
        "default": {
            # Django's Redis cache with one redis-py client per pool, not one per call (config/redis_cache.py).
            "BACKEND": "config.redis_cache.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "captioneval",
            # Bounded waits: a Redis host that drops packets instead of refusing them would otherwise hold every
            # request until the system's TCP timeout; with these the call fails and sessions fall back to the database.
            "OPTIONS": {"socket_connect_timeout": 2, "socket_timeout": 5},
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.db.DatabaseCache", "LOCATION": "django_cache"}}
# Every request of a signed-in person reads their session. With Redis it is read from the cache and written through
# to the database (a session outlives a Redis flush or restart), which saves each request a database query. Without
# Redis the cache is itself a database table, so the cached sessions would cost a query more, not one less. While
# Redis is unreachable the sessions are served from the database (config/sessions.py), so signed-in people go on.
if REDIS_URL:
    SESSION_ENGINE = "config.sessions"
CELERY_TASK_ALWAYS_EAGER = False
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 3600, minimum=10)
CELERY_TASK_SOFT_TIME_LIMIT = CELERY_TASK_TIME_LIMIT - 5

# --- Metric-run chunks (metrics_bridge/services/runs/runs.py) -------------------
# A worker scoring a chunk holds a lease and renews it every third of this; a lease left to expire
# (worker killed or hung) makes the chunk claimable again.
METRICS_CHUNK_LEASE_SECONDS = env_int("METRICS_CHUNK_LEASE_SECONDS", 60, minimum=1)
# A chunk that failed or lost its worker this many times is marked failed with its last error.
METRICS_CHUNK_MAX_ATTEMPTS = env_int("METRICS_CHUNK_MAX_ATTEMPTS", 3, minimum=1)
# Workers write a heartbeat row this often, and sweep expired leases; a worker is "alive" when its
# last heartbeat is newer than three periods.
METRICS_WORKER_HEARTBEAT_SECONDS = env_int("METRICS_WORKER_HEARTBEAT_SECONDS", 10, minimum=1)
# Requests per chunk for metrics whose scores don't depend on the rest of the batch (smaller: finer progress).
METRICS_CHUNK_SIZE = env_int("METRICS_CHUNK_SIZE", 500, minimum=1)
# Metric names whose slow resources (METEOR's JVM, the Sentence-BERT model) a worker starts as soon as it
# starts, e.g. "METEOR"; `compute_metrics --wait` sets it for its temporary worker. Otherwise a worker starts
# them when it takes the first chunk of a run that needs them, and keeps them for the next runs.
METRICS_WARM_UP = env_list("METRICS_WARM_UP", [])
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]

# A refused form (CSRF) gets the site's 403 page with what to do, not Django's bare one.
CSRF_FAILURE_VIEW = "config.errors.csrf_failure"

# --- Auth, REST -----------------------------------------------------------
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "annotation:home"
LOGOUT_REDIRECT_URL = "login"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 10}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Login throttling (django-axes): the sign-in page, the admin and /api/token/ all authenticate through
# these backends. LOGIN_FAILURE_LIMIT failures for one username from one address lock that pair out for
# LOGIN_LOCKOUT_MINUTES (answer 429); a success clears the count. Username+address rather than address
# alone, so one rater's typos don't lock out a whole lab behind one NAT address.
# The last one only reads the sessions of crowd participants (their account and participation in one query).
AUTHENTICATION_BACKENDS = [
    "config.authentication.LockoutBackend",
    "django.contrib.auth.backends.ModelBackend",
    "ratings.authentication.ParticipantBackend",
]
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("LOGIN_LOCKOUT_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_VERBOSE = False
# The address half of the lockout pair: the client behind a trusted proxy (TRUSTED_PROXIES), not the proxy.
AXES_CLIENT_IP_CALLABLE = "common.client_address.client_address"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.TokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "config.api_schema.CaptionEvalAutoSchema",
    "EXCEPTION_HANDLER": "config.errors.api_exception_handler",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Audio caption evaluation API",
    "DESCRIPTION": "Corpus, human judgements and automatic metrics for audio captions.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["accounts.permissions.SchemaReaders"],
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
# Lifetime of the pre-signed S3 URLs a rater's browser is sent to for an item's audio (seconds).
RATER_AUDIO_URL_SECONDS = env_int("RATER_AUDIO_URL_SECONDS", 300, minimum=30)
# Crowd studies (docs/studies.md): new participants per client address and window; lifetime of the signed
# links that continue a participation in another window (MTurk) or open an admin's preview; the seconds the end
# page waits before sending a participant back to their platform; MTurk's hosts (turkSubmitTo must be one of
# them) and the origins that may show study pages in a frame (MTurk's ExternalQuestion).
STUDY_ARRIVALS_PER_ADDRESS = env_int("STUDY_ARRIVALS_PER_ADDRESS", 20, minimum=1)
STUDY_ARRIVAL_WINDOW_MINUTES = env_int("STUDY_ARRIVAL_WINDOW_MINUTES", 60, minimum=1)
STUDY_ENTER_LINK_HOURS = env_int("STUDY_ENTER_LINK_HOURS", 24, minimum=1)
STUDY_END_REDIRECT_SECONDS = env_int("STUDY_END_REDIRECT_SECONDS", 5, minimum=0)
# Crowd studies, no reward without work: a participant with no request for STUDY_INACTIVE_MINUTES loses their share
# (and counts no longer as arriving); at most STUDY_UNSTARTED_LIMIT active participants per study may be between
# arrival and the start of rating (new arrivals past it are asked to try again later); an answer sent at the time
# limit is accepted for STUDY_EXPIRY_GRACE_SECONDS more (the page submits it when the countdown ends).
STUDY_INACTIVE_MINUTES = env_int("STUDY_INACTIVE_MINUTES", 10, minimum=1)
# A participant's open page reports itself every STUDY_HEARTBEAT_SECONDS while they use it (keys, touches, scrolling,
# audio within STUDY_INACTIVE_MINUTES), so reading and thinking count as work; 0: no heartbeat.
STUDY_HEARTBEAT_SECONDS = env_int("STUDY_HEARTBEAT_SECONDS", 60, minimum=0)
STUDY_UNSTARTED_LIMIT = env_int("STUDY_UNSTARTED_LIMIT", 50, minimum=1)
STUDY_EXPIRY_GRACE_SECONDS = env_int("STUDY_EXPIRY_GRACE_SECONDS", 30, minimum=0)
MTURK_SUBMIT_HOSTS = env_list("MTURK_SUBMIT_HOSTS", ["https://www.mturk.com", "https://workersandbox.mturk.com"])
MTURK_FRAME_ANCESTORS = env_list(
    "MTURK_FRAME_ANCESTORS",
    ["https://worker.mturk.com", "https://workersandbox.mturk.com", "https://www.mturk.com"],
)
# Largest uncompressed size accepted for an uploaded workbook (zip-bomb guard). Parsing costs up to ~8x the
# unpacked XML in memory (shared strings), so 16 MiB keeps a worst-case file well under 256 MB.
WORKBOOK_MAX_UNCOMPRESSED_BYTES = env_int("WORKBOOK_MAX_UNCOMPRESSED_BYTES", 16 * 1024 * 1024, minimum=1024)
# Optional OpenAI-compatible endpoint for LLM judges and the LLM X-ACE extractor.
LLM_API_BASE = env_url("LLM_API_BASE", schemes={"http", "https"})
LLM_API_KEY = env_str("LLM_API_KEY")
LLM_MODEL = env_str("LLM_MODEL")
# Captioning through audio-language-model APIs ("Evaluate a model", generate_captions). Keys are read from the
# environment when a job runs, never stored; the page may only name the variables listed here.
CAPTIONING_KEY_VARIABLES = env_list(
    "CAPTIONING_KEY_VARIABLES", ["OPENAI_API_KEY", "GEMINI_API_KEY", "DASHSCOPE_API_KEY"]
)
# A JSON file adding to or correcting the built-in price table (metrics_bridge/captioning/pricing.py).
CAPTIONING_PRICE_TABLE = env_str("CAPTIONING_PRICE_TABLE")
# Metrics a model's new captions are scored with (empty: every metric that can run here, LLM judges included
# when LLM_API_BASE is set).
CAPTIONING_METRICS = env_list("CAPTIONING_METRICS", [])
CAPTIONING_REQUEST_TIMEOUT_SECONDS = env_int("CAPTIONING_REQUEST_TIMEOUT_SECONDS", 120, minimum=1)
# A running job whose process sent no heartbeat for this long is taken over by the next worker (it died).
CAPTIONING_JOB_STALE_SECONDS = env_int("CAPTIONING_JOB_STALE_SECONDS", 120, minimum=5)
# Local resources of optional metrics (passed to the scorers through their ScoringContext).
SPICE_CORENLP_DIR = env_str("SPICE_CORENLP_DIR")
SPICE_CACHE_DIR = env_str("SPICE_CACHE_DIR")
FENSE_ERROR_DETECTOR_PATH = env_str("FENSE_ERROR_DETECTOR_PATH")
FENSE_ERROR_DETECTOR_BASE = env_str("FENSE_ERROR_DETECTOR_BASE")
# A LAION CLAP checkpoint in the transformers layout (CLAP and MACE are unavailable without one).
CLAP_MODEL_DIR = env_str("CLAP_MODEL_DIR")

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# Runs, chunks, workers and imports log one JSON object per line under the `captioneval` logger
# (common/structured_log.py); everything else goes through the plain console handler. A request answered 4xx is
# not logged by Django (the server's access line already says it) and never with a traceback; a 5xx is, with it.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json_lines": {"()": "common.structured_log.JsonLinesFormatter"}},
    "filters": {"no_client_error_tracebacks": {"()": "config.log_filters.NoTracebackForClientErrors"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler", "filters": ["no_client_error_tracebacks"]},
        "events": {"class": "logging.StreamHandler", "formatter": "json_lines"},
    },
    "loggers": {
        "captioneval": {"handlers": ["events"], "level": env_str("EVENT_LOG_LEVEL") or "INFO", "propagate": False},
        "django.request": {"level": "ERROR"},
        # a request with a Host header this site does not serve: the 400 in the access line says enough
        "django.security.DisallowedHost": {"level": "CRITICAL"},
    },
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL") or "WARNING"},
}
