"""ReproGate settings: one module, driven by the environment.

With no environment variable at all this is the embedded default: SQLite and files
under ``var/``, a Celery broker in a SQLite file there. Production differs only by
environment (see ``deploy/.env.example`` for every variable).
"""

from __future__ import annotations

import ipaddress
import warnings
from pathlib import Path
from urllib.parse import urlsplit

import dj_database_url

from artifacts.lib.archive import DEFAULT_LIMITS, GiB, MiB
from config.env import (
    SettingError,
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_list,
    env_origin,
    env_secret,
    env_str,
    env_url,
)
from config.logs import logging_filters, logging_formatters

# pyHanko imports cryptography's DSA key type, which cryptography deprecates at
# import time (a library's import, not a signature this product makes or checks).
# Without this, every process that loads the report code starts with that warning.
warnings.filterwarnings("ignore", message="DSA is deprecated", module=r"pyhanko\.")

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("REPROGATE_VAR_DIR", str(BASE_DIR / "var"))).resolve()
# /healthz fails its disk check below this much free space there (portal/health.py).
REPROGATE_MIN_FREE_DISK_MB = env_int(
    "REPROGATE_MIN_FREE_DISK_MB", default=100, minimum=0
)

# --- Core ---------------------------------------------------------------------------
# https://docs.djangoproject.com/en/5.2/ref/settings/#debug
DEBUG = env_bool("DJANGO_DEBUG", default=False)
# The embedded default (scripts/_env.sh sets it for scripts/run, scripts/manage and
# scripts/celery): plain http on this machine, static files from the source tree,
# e-mails as files under REPROGATE_VAR_DIR/mail, demo data allowed; DEBUG stays
# off, so an error never serves a traceback page (with the settings and the process
# environment) to whoever can reach the port. Its secret key is a file the script
# generates under REPROGATE_VAR_DIR (DJANGO_SECRET_KEY_FILE).
REPROGATE_EMBEDDED = env_bool("REPROGATE_EMBEDDED", default=False)
_LOCAL = DEBUG or REPROGATE_EMBEDDED  # plain http, local conveniences
SECRET_KEY = env_secret(
    "DJANGO_SECRET_KEY", default="dev-insecure-not-for-production" if DEBUG else None
)
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])
# The demo accounts exist only where seed_demo ran; it refuses outside the embedded
# default unless DEBUG is on.
REPROGATE_SITE_NAME = env_str("REPROGATE_SITE_NAME", "ReproGate")
# The address scripts/run serves on (runserver), and the site's own URL: links that
# leave the app (e-mails, hints for the CLI) start with it; accounts.conf.absolute_url
# builds them. Production sets REPROGATE_SITE_URL (e.g. https://reprogate.example.com).
REPROGATE_HOST = env_str("REPROGATE_HOST", "127.0.0.1")
REPROGATE_PORT = env_int("REPROGATE_PORT", default=8000, minimum=1, maximum=65535)
_LINK_HOST = "127.0.0.1" if REPROGATE_HOST in ("0.0.0.0", "::") else REPROGATE_HOST  # noqa: S104
REPROGATE_SITE_URL = env_origin(
    "REPROGATE_SITE_URL",
    # REPROGATE_BASE_URL is the variable's older name
    env_str("REPROGATE_BASE_URL", f"http://{_LINK_HOST}:{REPROGATE_PORT}"),
)
_SITE_HOST = urlsplit(REPROGATE_SITE_URL).hostname or _LINK_HOST
ALLOWED_HOSTS = env_list(
    "DJANGO_ALLOWED_HOSTS",
    list(dict.fromkeys(["127.0.0.1", "localhost", _SITE_HOST])) if _LOCAL else [],
)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django_htmx",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "accounts",
    "procurement",
    "artifacts",
    "benchmarks",
    "gates",
    "portal",  # cross-app pages (dashboards) and the demo seed; depends on all others
    "config.apps.ConfigAppConfig",  # start-up checks of the keys, backup_check
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "config.headers.SecurityHeadersMiddleware",  # before WhiteNoise: static files too
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "accounts.views.middleware.RequestIdMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "accounts.views.disk_full.DiskFullMiddleware",  # last: a view's error, first
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

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
                "accounts.views.context_processors.navigation",
            ],
        },
    },
]

# --- Database -----------------------------------------------------------------------
# https://docs.djangoproject.com/en/5.2/ref/settings/#databases
# DATABASE_URL_FILE: a file holding the URL (its password with it).
_database_url = env_url(
    "DATABASE_URL",
    env_secret("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'db.sqlite3'}"),
    schemes=frozenset({"sqlite", "postgres", "postgresql", "pgsql"}),
)
try:
    DATABASES = {
        "default": dj_database_url.parse(
            _database_url, conn_max_age=env_int("DB_CONN_MAX_AGE", default=60)
        )
    }
except ValueError as exc:
    raise SettingError(f"DATABASE_URL is not usable: {exc}") from None
if _database_url.startswith(f"sqlite:///{VAR_DIR}/"):
    # The embedded default: a fresh clone has no var/ yet, and SQLite makes no folder.
    try:
        VAR_DIR.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SettingError(
            f"REPROGATE_VAR_DIR={str(VAR_DIR)!r} cannot be created: {exc.strerror}."
        ) from None
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    # SQLite's default page cache (2 MiB a connection): a read of every row, such as
    # the fixity check's, would otherwise keep what it read. The ingest's accept
    # transaction asks for more while it runs (``artifacts.storage.bulk``).
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA busy_timeout = 5000; PRAGMA journal_mode = WAL;",
        "transaction_mode": "IMMEDIATE",
    }
else:
    # PostgreSQL compiles a query whose estimated cost passes jit_above_cost: a
    # page's query over thousands of audit rows spent 20-50 ms compiling to run in
    # 20. The URL's own ``?options=`` come after this and win (``-c jit=on``).
    _options = DATABASES["default"].setdefault("OPTIONS", {})
    _options["options"] = f"-c jit=off {_options.get('options', '')}".strip()

# --- Authentication -----------------------------------------------------------------
LOGIN_URL = "accounts:login"
LOGIN_REDIRECT_URL = "portal:dashboard"
LOGOUT_REDIRECT_URL = "accounts:login"
_VALIDATORS_MODULE = "django.contrib.auth.password_validation"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": f"{_VALIDATORS_MODULE}.UserAttributeSimilarityValidator"},
    {"NAME": f"{_VALIDATORS_MODULE}.MinimumLengthValidator"},
    {"NAME": f"{_VALIDATORS_MODULE}.CommonPasswordValidator"},
    {"NAME": f"{_VALIDATORS_MODULE}.NumericPasswordValidator"},
]
# API tokens expire; a vendor CLI re-authenticates with its password.
REPROGATE_API_TOKEN_TTL_DAYS = env_int(
    "REPROGATE_API_TOKEN_TTL_DAYS", default=90, minimum=1
)

# --- Procurement --------------------------------------------------------------------
PROCUREMENT_BID_DOCUMENT_MAX_BYTES = env_int(
    "PROCUREMENT_BID_DOCUMENT_MAX_BYTES", default=100 * 1024 * 1024, minimum=1
)

# --- Bundles (artifacts.conf reads them) ------------------------------------------
# The largest archive an upload may send (413 above it). Uploads stream to disk;
# FILE_UPLOAD_MAX_MEMORY_SIZE only decides when Django switches to a temporary file.
BUNDLE_MAX_UPLOAD_BYTES = env_int("BUNDLE_MAX_UPLOAD_BYTES", default=4 * GiB, minimum=1)
# The archive reader's limits; the defaults are the offline verifier's
# (artifacts.lib.archive.DEFAULT_LIMITS), so the server and the CLI agree.
BUNDLE_MAX_MEMBER_BYTES = env_int(
    "BUNDLE_MAX_MEMBER_BYTES", default=DEFAULT_LIMITS.max_member_bytes, minimum=1
)
BUNDLE_MAX_MEMBERS = env_int(
    "BUNDLE_MAX_MEMBERS", default=DEFAULT_LIMITS.max_members, minimum=1
)
BUNDLE_MAX_TOTAL_BYTES = env_int(
    "BUNDLE_MAX_TOTAL_BYTES", default=DEFAULT_LIMITS.max_total_bytes, minimum=1
)
BUNDLE_MAX_COMPRESSION_RATIO = env_float(
    "BUNDLE_MAX_COMPRESSION_RATIO", default=DEFAULT_LIMITS.max_ratio, minimum=1
)
# Where a bundle's files wait for the verdict: unset, FILE_UPLOAD_TEMP_DIR, else the
# system's temporary directory. On MEDIA_ROOT's file system, files are renamed in.
BUNDLE_SPOOL_DIR = env_str("BUNDLE_SPOOL_DIR", "")
# Blobs of one bundle written to storage at once; unset: 1 on local files, 4 on S3.
BUNDLE_STORAGE_THREADS = env_int("BUNDLE_STORAGE_THREADS", default=None, minimum=1)
# The largest environment manifest read for the completeness report.
BUNDLE_ENVIRONMENT_MAX_BYTES = env_int(
    "BUNDLE_ENVIRONMENT_MAX_BYTES", default=1 * MiB, minimum=1
)
# Signed report PDFs (kind "report"): a PEM file of the roots whose signers the
# bundle page calls trusted (unset: none; an untrusted signer is shown, not refused),
# the largest PDF checked and the seconds one check may take (a child process).
BUNDLE_REPORT_TRUST_ROOTS_FILE = env_str("BUNDLE_REPORT_TRUST_ROOTS_FILE", "")
BUNDLE_REPORT_MAX_BYTES = env_int(
    "BUNDLE_REPORT_MAX_BYTES", default=64 * MiB, minimum=1
)
BUNDLE_REPORT_CHECK_SECONDS = env_float(
    "BUNDLE_REPORT_CHECK_SECONDS", default=30.0, minimum=1
)

# --- Internationalisation -----------------------------------------------------------
LANGUAGE_CODE = "en-gb"
TIME_ZONE = env_str("DJANGO_TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

# --- Files --------------------------------------------------------------------------
# https://docs.djangoproject.com/en/5.2/ref/settings/#storages
STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    "config.staticfinders.PlotlyFinder",  # plotly.js from the installed package
]
# Whether STATIC_ROOT holds collectstatic's output (hashed names, .gz and .br
# beside each file), which whitenoise then serves with a one-year immutable
# Cache-Control: production's (its image collects at build time), and scripts/run's,
# which collects into its var dir at each start (quick when nothing changed) and
# sets it. Otherwise (DEBUG, scripts/manage runserver) whitenoise serves the
# finders' files, refreshed on every request, under their plain names; plotly.js
# from the finder is a versioned copy with .gz beside it.
REPROGATE_STATIC_COLLECTED = env_bool("REPROGATE_STATIC_COLLECTED", default=not _LOCAL)
WHITENOISE_USE_FINDERS = not REPROGATE_STATIC_COLLECTED
WHITENOISE_AUTOREFRESH = not REPROGATE_STATIC_COLLECTED
STATIC_VENDOR_CACHE = VAR_DIR / "cache" / "static"


def _static_immutable(path: str, url: str) -> bool:
    """Versioned and hashed static names are cached by browsers for good."""
    from config.staticfinders import immutable_file_test

    return immutable_file_test(path, url)


WHITENOISE_IMMUTABLE_FILE_TEST = _static_immutable
MEDIA_ROOT = VAR_DIR / "media"
MEDIA_URL = "media/"
AWS_STORAGE_BUCKET_NAME = env_str("AWS_STORAGE_BUCKET_NAME", "")
if AWS_STORAGE_BUCKET_NAME:
    _default_storage = {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": AWS_STORAGE_BUCKET_NAME,
            "endpoint_url": env_str("AWS_S3_ENDPOINT_URL", "") or None,
            "region_name": env_str("AWS_S3_REGION_NAME", "") or None,
            "access_key": env_secret("AWS_ACCESS_KEY_ID", default="") or None,
            "secret_key": env_secret("AWS_SECRET_ACCESS_KEY", default="") or None,
            "addressing_style": env_str("AWS_S3_ADDRESSING_STYLE", "auto"),
            "signature_version": "s3v4",
            "location": env_str("AWS_LOCATION", "media"),
            "file_overwrite": False,
            "default_acl": None,
        },
    }
else:
    _default_storage = {
        "BACKEND": "artifacts.storage.local.BlobFileSystemStorage",
        "OPTIONS": {"location": MEDIA_ROOT},
    }
STORAGES = {
    "default": _default_storage,
    "staticfiles": {
        "BACKEND": "config.staticfinders.CompressedManifestStaticFilesStorage"
        if REPROGATE_STATIC_COLLECTED
        else "config.staticfinders.StaticFilesStorage"
    },
}

# --- Keys (docs/operations.md) -------------------------------------------------------
# The folder the installation's keys are made in on first use (the log's key, the
# report signer and the statement key default under it): outside the database, so
# back it up with the database (docs/operations.md, "Backup and restore"). Once
# checkpoints or signed reports exist, a missing key is never made again: start-up
# checks (manage.py check --deploy) refuse such an installation.
REPROGATE_KEYS_DIR = Path(
    env_str("REPROGATE_KEYS_DIR", str(VAR_DIR / "keys"))
).resolve()

# --- Transparency log (docs/architecture.md) ------------------------------------------
# The log's Ed25519 signing key: generated on first use (mode 0600), kept outside the
# database. Back it up: without it the log signs no new checkpoint (and never
# silently starts a new key once checkpoints exist).
REPROGATE_LOG_KEY_PATH = env_str(
    "REPROGATE_LOG_KEY_PATH", str(REPROGATE_KEYS_DIR / "transparency-log.pem")
)
# The log's name, first line of every checkpoint and name of its key: a schema-less
# URL unique to this installation (C2SP tlog-checkpoint), fixed for the log's life.
REPROGATE_LOG_ORIGIN = env_str("REPROGATE_LOG_ORIGIN", "reprogate.local/log")
# The largest leaf log_append takes.
REPROGATE_LOG_MAX_LEAF_BYTES = env_int(
    "REPROGATE_LOG_MAX_LEAF_BYTES", default=16 * MiB, minimum=1
)

# --- Signed reports (docs/reports.md) -------------------------------------------------
# The reports' PAdES signer: a directory the installation's report CA, signing
# certificate and key are created in on first use (kept: never regenerated once
# reports exist), unless REPROGATE_REPORT_SIGNER names the installation's own
# certificate: a PKCS#12 file, or a PEM certificate chain whose key is in
# REPROGATE_REPORT_SIGNER_KEY (both optionally protected by the password).
REPROGATE_REPORT_KEYS_DIR = env_str(
    "REPROGATE_REPORT_KEYS_DIR", str(REPROGATE_KEYS_DIR / "reports")
)
REPROGATE_REPORT_SIGNER = env_str("REPROGATE_REPORT_SIGNER", "")
REPROGATE_REPORT_SIGNER_KEY = env_str("REPROGATE_REPORT_SIGNER_KEY", "")
REPROGATE_REPORT_SIGNER_PASSWORD = env_secret(
    "REPROGATE_REPORT_SIGNER_PASSWORD", default=""
)
# An RFC 3161 time-stamping authority: every report signature carries its token
# when set (empty: signed without a timestamp).
REPROGATE_REPORT_TSA_URL = env_str("REPROGATE_REPORT_TSA_URL", "")
# The installation's Ed25519 key that signs each report's in-toto statement (DSSE);
# its public key is served at /api/v1/reports/key and in every evidence package.
REPROGATE_REPORT_STATEMENT_KEY_PATH = env_str(
    "REPROGATE_REPORT_STATEMENT_KEY_PATH",
    str(REPROGATE_KEYS_DIR / "reports" / "statement.pem"),
)
# Each process of a worker taking the default queue starts the report renderers
# (Chromium for the charts, WeasyPrint) in the background as it starts, so its
# first report does not wait for them (gates.tasks); False: on the first report.
REPROGATE_REPORT_WARM_UP = env_bool("REPROGATE_REPORT_WARM_UP", default=True)

# --- Escrow (docs/architecture.md) ----------------------------------------------------
# Deposits are kept this many years when the contract terms name no period.
ESCROW_RETENTION_YEARS = env_int("ESCROW_RETENTION_YEARS", default=10, minimum=1)
# S3 Object Lock for deposited blobs when the bucket has it: "auto" or "off"; the
# retention mode COMPLIANCE (nobody can shorten it) or GOVERNANCE.
ESCROW_OBJECT_LOCK = env_choice("ESCROW_OBJECT_LOCK", "auto", choices=("auto", "off"))
ESCROW_OBJECT_LOCK_MODE = env_choice(
    "ESCROW_OBJECT_LOCK_MODE", "COMPLIANCE", choices=("COMPLIANCE", "GOVERNANCE")
)
# Release of escrow: days the vendor has to object to a release request.
ESCROW_RELEASE_NOTICE_DAYS = env_int(
    "ESCROW_RELEASE_NOTICE_DAYS", default=14, minimum=0
)
# Fixity (manage.py escrow_verify and the beat task): hours between scheduled checks,
# and how old an object under blobs/ with no blob row must be to count as extra.
ESCROW_FIXITY_EVERY_HOURS = env_int("ESCROW_FIXITY_EVERY_HOURS", default=24, minimum=1)
ESCROW_FIXITY_GRACE_SECONDS = env_int(
    "ESCROW_FIXITY_GRACE_SECONDS", default=3600, minimum=0
)
# Blob sweep (beat task): hours between sweeps of objects under blobs/ that no row
# names once they are past the grace period (bytes a failed ingest wrote). Fixity
# counts such an object as extra only once a sweep should have removed it.
BLOB_SWEEP_EVERY_HOURS = env_int("BLOB_SWEEP_EVERY_HOURS", default=24, minimum=1)

# --- Benchmark runner (benchmarks.conf reads them) --------------------------------
# Lab hosts set these in their workers' environment.
# How often a runner worker reports it is alive (and a running run writes its sign
# of life); a host silent RUNNER_LOST_AFTER_SECONDS is lost and its runs are reaped.
RUNNER_HEARTBEAT_SECONDS = env_float(
    "RUNNER_HEARTBEAT_SECONDS", default=10.0, minimum=0.1
)
RUNNER_LOST_AFTER_SECONDS = env_float(
    "RUNNER_LOST_AFTER_SECONDS", default=120.0, minimum=0.5
)
# A reaped run is re-queued while it has had fewer attempts than this, else it fails.
RUNNER_MAX_ATTEMPTS = env_int("RUNNER_MAX_ATTEMPTS", default=2, minimum=1)
# A run's wall-clock limit: its scenario's duration_s * factor + slack, at most the
# ceiling; a run claimed longer ago than its limit plus the grace is reaped.
RUNNER_WALL_FACTOR = env_float("RUNNER_WALL_FACTOR", default=3.0, minimum=1)
RUNNER_WALL_SLACK_SECONDS = env_float(
    "RUNNER_WALL_SLACK_SECONDS", default=300.0, minimum=1
)
RUNNER_MAX_WALL_SECONDS = env_float(
    "RUNNER_MAX_WALL_SECONDS", default=6 * 3600.0, minimum=1
)
RUNNER_WALL_GRACE_SECONDS = env_float(
    "RUNNER_WALL_GRACE_SECONDS", default=300.0, minimum=1
)
# A run still queued this long after it was sent, while its pool has an idle online
# host, is sent again (a lost message, or one held prefetched by a busy worker).
RUNNER_REDISPATCH_AFTER_SECONDS = env_float(
    "RUNNER_REDISPATCH_AFTER_SECONDS", default=300.0, minimum=1
)
# Progress and log tail are written at most this often; the tail keeps this much.
RUNNER_PROGRESS_WRITE_SECONDS = env_float(
    "RUNNER_PROGRESS_WRITE_SECONDS", default=1.0, minimum=0
)
RUNNER_LOG_TAIL_CHARS = env_int("RUNNER_LOG_TAIL_CHARS", default=16_000, minimum=100)
# Where each run gets a fresh working directory (deleted afterwards); unset: the
# system's temporary directory.
RUNNER_WORK_DIR = env_str("RUNNER_WORK_DIR", "")
# What is kept of the harness's output directory.
RUNNER_OUTPUT_LIMIT_BYTES = env_int(
    "RUNNER_OUTPUT_LIMIT_BYTES", default=1 * GiB, minimum=1
)
RUNNER_MAX_OUTPUT_FILES = env_int("RUNNER_MAX_OUTPUT_FILES", default=1000, minimum=1)
RUNNER_MAX_RUNS_PER_CAMPAIGN = env_int(
    "RUNNER_MAX_RUNS_PER_CAMPAIGN", default=1000, minimum=1
)
# The runner API's address as lab hosts reach it: pool_join and the pools page put
# it in the agent's command. Default: REPROGATE_SITE_URL.
REPROGATE_PUBLIC_URL = env_origin("REPROGATE_PUBLIC_URL", REPROGATE_SITE_URL)
# A pool's broker URL for its agents, without the password ({pool}: the pool's
# name). Empty: the printed command names BROKER-HOST to fill in.
REPROGATE_AGENT_BROKER_URL = env_str("REPROGATE_AGENT_BROKER_URL", "")

# --- Security -----------------------------------------------------------------------
# https://docs.djangoproject.com/en/5.2/howto/deployment/checklist/
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# The embedded default is http://127.0.0.1:8000: no HTTPS redirect, HSTS or secure
# cookies there (as with DEBUG); production's defaults are all on.
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", default=not _LOCAL)
SECURE_HSTS_SECONDS = env_int(
    "DJANGO_SECURE_HSTS_SECONDS", default=0 if _LOCAL else 31536000
)
SECURE_HSTS_INCLUDE_SUBDOMAINS = not _LOCAL
SECURE_HSTS_PRELOAD = env_bool("DJANGO_SECURE_HSTS_PRELOAD", default=False)
SESSION_COOKIE_SECURE = not _LOCAL
CSRF_COOKIE_SECURE = not _LOCAL
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
# Content-Security-Policy of every response (config.headers): local assets only, no
# inline script (htmx, Plotly and the pages' scripts are static files), no eval.
# Style attributes stay allowed, <style> elements not: a few templates set one-off
# layout and the bundle tree's indentation (--depth) in attributes; an attribute
# runs no script and loads nothing. Plotly's own styles are a file
# (config/plotly_css.py); Swagger UI's page has its own policy (config/api_urls.py).
REPROGATE_CSP: dict[str, list[str]] = {
    "default-src": ["'none'"],
    "script-src": ["'self'"],
    "style-src": ["'self'"],
    "style-src-attr": ["'unsafe-inline'"],
    "img-src": ["'self'", "data:"],
    "font-src": ["'self'"],
    "connect-src": ["'self'"],
    "form-action": ["'self'"],
    "frame-ancestors": ["'none'"],
    "base-uri": ["'none'"],
    "object-src": ["'none'"],
}
# Browser features no page uses, denied to the site and anything it could embed.
REPROGATE_PERMISSIONS_POLICY: dict[str, list[str]] = {
    feature: []
    for feature in (
        "accelerometer",
        "autoplay",
        "browsing-topics",
        "camera",
        "display-capture",
        "encrypted-media",
        "geolocation",
        "gyroscope",
        "hid",
        "idle-detection",
        "magnetometer",
        "microphone",
        "midi",
        "payment",
        "publickey-credentials-get",
        "screen-wake-lock",
        "serial",
        "usb",
        "xr-spatial-tracking",
    )
}
# /healthz is probed over plain HTTP by load balancers and the runner hosts.
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
# Reverse proxies (addresses or networks) whose X-Forwarded-For names the client,
# for the login lockout and rate limits (accounts.services.throttle); none: REMOTE_ADDR
# only.
REPROGATE_TRUSTED_PROXIES = env_list("REPROGATE_TRUSTED_PROXIES", [])
for _proxy in REPROGATE_TRUSTED_PROXIES:
    try:
        ipaddress.ip_network(_proxy, strict=False)
    except ValueError:
        raise SettingError(
            f"REPROGATE_TRUSTED_PROXIES: {_proxy!r} is not an address or network."
        ) from None
# Limits on password guessing (accounts.services.throttle, docs/operations.md):
# failures in
# a window counted per (account, client address), per address (a ceiling that
# colleagues behind one NAT do not reach) and per account across addresses
# (beyond it each address gets 3 failures: slower stuffing, no lockout).
REPROGATE_LOGIN_WINDOW_SECONDS = env_int(
    "REPROGATE_LOGIN_WINDOW_SECONDS", default=300, minimum=1
)
REPROGATE_LOGIN_FAILURES_PER_ACCOUNT_ADDRESS = env_int(
    "REPROGATE_LOGIN_FAILURES_PER_ACCOUNT_ADDRESS", default=10, minimum=1
)
REPROGATE_LOGIN_FAILURES_PER_ADDRESS = env_int(
    "REPROGATE_LOGIN_FAILURES_PER_ADDRESS", default=100, minimum=1
)
REPROGATE_LOGIN_FAILURES_PER_ACCOUNT = env_int(
    "REPROGATE_LOGIN_FAILURES_PER_ACCOUNT", default=100, minimum=1
)
SILENCED_SYSTEM_CHECKS = (
    [] if env_bool("DJANGO_SECURE_HSTS_PRELOAD", default=False) else ["security.W021"]
)

# --- REST framework -----------------------------------------------------------------
# https://www.django-rest-framework.org/api-guide/settings/
REST_FRAMEWORK = {
    # ``?format=`` given empty is refused as an unknown format, not ignored.
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": (
        "accounts.api.negotiation.StrictFormatNegotiation"
    ),
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.api.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": [
        "accounts.api.parsers.JSONParser",  # refuses JSON nested too deep with a 400
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_PAGINATION_CLASS": "accounts.api.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 50,  # accounts.lib.paging.PAGE_SIZE (settings import no app)
    "EXCEPTION_HANDLER": "accounts.api.errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "accounts.api.schema.AutoSchema",
    "DEFAULT_THROTTLE_RATES": {"login": env_str("REPROGATE_LOGIN_THROTTLE", "20/min")},
    # DRF's own client address never reads X-Forwarded-For; the login throttle
    # counts per account and accounts.services.throttle.client_address (trusted
    # proxies).
    "NUM_PROXIES": 0,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "ReproGate API",
    "DESCRIPTION": "Procurement of storage acceleration on evidence anyone can re-run.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # An artifact's kind: one enum for the RFP's answer and its input alike.
    "ENUM_NAME_OVERRIDES": {"ArtifactKindEnum": "procurement.models.ArtifactKind"},
}

# --- Celery -------------------------------------------------------------------------
# https://docs.celeryq.dev/en/stable/userguide/configuration.html
BROKER_DIR = VAR_DIR / "broker"
# Embedded default: kombu's SQLAlchemy transport on a SQLite file
# (benchmarks/lib/broker.py), no server. Production sets Redis or RabbitMQ.
# kombu's filesystem transport is not accepted: its consumer reads message files
# still being written and dies.
# CELERY_BROKER_URL_FILE / CELERY_RESULT_BACKEND_FILE: files holding the URLs.
CELERY_BROKER_URL = env_url(
    "CELERY_BROKER_URL",
    env_secret(
        "CELERY_BROKER_URL", default=f"sqla+sqlite:///{BROKER_DIR / 'broker.sqlite3'}"
    ),
    schemes=frozenset({"sqla+sqlite", "redis", "rediss", "amqp", "amqps", "pyamqp"}),
)
if CELERY_BROKER_URL.startswith("sqla+"):
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "polling_interval": 0.2,
        # An unacknowledged message comes back this long after its worker died.
        "visibility_timeout": 60.0,
    }
CELERY_RESULT_BACKEND = env_secret("CELERY_RESULT_BACKEND", default="") or None
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "celery"
CELERY_TASK_SOFT_TIME_LIMIT = env_int(
    "CELERY_TASK_SOFT_TIME_LIMIT", default=3600, minimum=1
)
CELERY_TASK_ALWAYS_EAGER = False
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULE: dict[str, dict[str, object]] = {
    # Deadlines are also re-checked whenever an RFP is read; this catches the rest.
    "procurement-deadlines": {"task": "procurement.apply_deadlines", "schedule": 60.0},
    # Runs whose worker died are re-queued or failed (benchmarks.services.reaper).
    "benchmarks-reaper": {"task": "benchmarks.reap_runs", "schedule": 30.0},
    # Escrow fixity: every blob re-hashed, rows and log re-checked (daily by default).
    "escrow-fixity": {
        "task": "artifacts.escrow_verify",
        "schedule": ESCROW_FIXITY_EVERY_HOURS * 3600.0,
    },
    # Blobs no row refers to (left by failed ingests), past the fixity grace period.
    "blob-sweep": {
        "task": "artifacts.blob_sweep",
        "schedule": BLOB_SWEEP_EVERY_HOURS * 3600.0,
    },
    # Transparency log: a checkpoint if the log grew (deposits publish their own).
    "log-checkpoint": {"task": "artifacts.checkpoint_publish", "schedule": 60.0},
    # Re-test obligations past their deadline are expired (a breach); reads see it
    # before through ``RetestObligation.status_now``.
    "gates-obligations-expire": {
        "task": "gates.expire_obligations",
        "schedule": 3600.0,
    },
    # Signed reports whose worker or message was lost are queued or sent again.
    "gates-reports-reap": {"task": "gates.reap_reports", "schedule": 60.0},
}

# --- Email --------------------------------------------------------------------------
# The embedded default writes each e-mail to a file under $REPROGATE_VAR_DIR/mail/
# (the console stays for what the supervisor says); DEBUG alone prints them.
EMAIL_BACKEND = env_str(
    "DJANGO_EMAIL_BACKEND",
    "django.core.mail.backends.filebased.EmailBackend"
    if REPROGATE_EMBEDDED
    else "django.core.mail.backends.console.EmailBackend"
    if DEBUG
    else "django.core.mail.backends.smtp.EmailBackend",
)
EMAIL_FILE_PATH = VAR_DIR / "mail"
DEFAULT_FROM_EMAIL = env_str("DJANGO_DEFAULT_FROM_EMAIL", "reprogate@localhost")

# --- Logging ------------------------------------------------------------------------
# json: one JSON object a line (time, level, logger, message, request_id, exception,
# a Celery task's id and name: config/logs.py), for a log collector; plain: text.
# Default json, plain with DEBUG on or in the embedded default. gunicorn's own
# lines follow the same variable (deploy/gunicorn.conf.py).
REPROGATE_LOG_FORMAT = env_choice(
    "REPROGATE_LOG_FORMAT", "plain" if _LOCAL else "json", choices=("json", "plain")
)
LOGGING_CONFIG = "config.logs.logging_configure"  # dictConfig, warnings captured
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": logging_formatters(),
    # A 4xx is one line, without the traceback Django attaches to a 403 or a 400
    # (on django.request itself, and on the handler for django.security's lines).
    "filters": logging_filters(),
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": REPROGATE_LOG_FORMAT,
            "filters": ["client_errors"],
        }
    },
    "root": {"handlers": ["console"], "level": env_str("DJANGO_LOG_LEVEL", "INFO")},
    # WeasyPrint and fontTools log every layout step and font subset at INFO,
    # kaleido and choreographer every Chromium start, tab and clean-up.
    "loggers": {
        "django.request": {"filters": ["client_errors"]},
        "weasyprint": {"level": "WARNING"},
        "fontTools": {"level": "WARNING"},
        "kaleido": {"level": "WARNING"},
        "choreographer": {"level": "WARNING"},
    },
}

# --- Metrics (/metrics, docs/monitoring.md) -----------------------------------
# Prometheus reads /metrics without logging in from these addresses or networks
# (default: this machine only), or from anywhere with ``Authorization: Bearer
# <REPROGATE_METRICS_TOKEN>`` when a token is set. Neither: 404.
REPROGATE_METRICS_ALLOWED = env_list("REPROGATE_METRICS_ALLOWED", ["127.0.0.1", "::1"])
for _network in REPROGATE_METRICS_ALLOWED:
    try:
        ipaddress.ip_network(_network, strict=False)
    except ValueError:
        raise SettingError(
            f"REPROGATE_METRICS_ALLOWED: {_network!r} is not an address or network."
        ) from None
REPROGATE_METRICS_TOKEN = env_secret("REPROGATE_METRICS_TOKEN", default="")
