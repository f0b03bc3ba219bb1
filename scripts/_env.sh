# Sourced by scripts/run, scripts/manage and scripts/celery after scripts/_venv.sh
# (which cd's to the repository): the embedded default's environment. A variable set
# beforehand wins.
#   REPROGATE_EMBEDDED      True: plain http, static files from the source tree
#                           (scripts/run collects them: REPROGATE_STATIC_COLLECTED),
#                           e-mails as files in $REPROGATE_VAR_DIR/mail, demo data
#   DJANGO_DEBUG            not set: off, so an error shows the product's error page,
#                           never a traceback with the settings and the environment
#   DJANGO_SECRET_KEY_FILE  $REPROGATE_VAR_DIR/secret-key, generated once (mode
#                           0600), unless DJANGO_SECRET_KEY or this is set
#   REPROGATE_HOST          127.0.0.1, the address runserver listens on (loopback:
#                           this machine only)
#   REPROGATE_PORT          8000 (or the port scripts/run last served the var dir
#                           on), its port; links in notifications follow the two
#   REPROGATE_VAR_DIR       var, where SQLite, files, keys and the broker live (made
#                           if missing; a relative path is from the repository)
#   REPROGATE_URL           the site's URL for the reprogate CLI and the examples:
#                           REPROGATE_SITE_URL if set, else http://HOST:PORT
export REPROGATE_EMBEDDED="${REPROGATE_EMBEDDED:-True}"
export REPROGATE_HOST="${REPROGATE_HOST:-127.0.0.1}"
export REPROGATE_VAR_DIR="${REPROGATE_VAR_DIR:-var}"
# The port scripts/run last served this var dir on ($REPROGATE_VAR_DIR/run-port):
# a command given the var dir alone links to that instance, not to port 8000.
if [ -z "${REPROGATE_PORT:-}" ] && [ -f "$REPROGATE_VAR_DIR/run-port" ]; then
  saved_port="$(head -c 16 "$REPROGATE_VAR_DIR/run-port" | tr -d '[:space:]')"
  case "$saved_port" in
  "" | *[!0-9]*) ;; # not a port: ignored
  *) REPROGATE_PORT="$saved_port" ;;
  esac
fi
export REPROGATE_PORT="${REPROGATE_PORT:-8000}"
case "$REPROGATE_HOST" in
0.0.0.0 | "::" | "[::]") link_host=127.0.0.1 ;; # listens everywhere: links use loopback
*) link_host="$REPROGATE_HOST" ;;
esac
export REPROGATE_URL="${REPROGATE_URL:-${REPROGATE_SITE_URL:-http://$link_host:$REPROGATE_PORT}}"
mkdir -p "$REPROGATE_VAR_DIR"
REPROGATE_VAR_DIR="$(cd "$REPROGATE_VAR_DIR" && pwd)"

if [ -z "${DJANGO_SECRET_KEY:-}" ] && [ -z "${DJANGO_SECRET_KEY_FILE:-}" ]; then
  DJANGO_SECRET_KEY_FILE="$REPROGATE_VAR_DIR/secret-key"
  if [ ! -s "$DJANGO_SECRET_KEY_FILE" ]; then
    rm -f "$DJANGO_SECRET_KEY_FILE" # an empty one is no key
    # Written aside, then linked in place only if still missing: a script starting
    # at the same moment reads a whole key, and the first one made stays.
    scratch="$(umask 077 && mktemp "$REPROGATE_VAR_DIR/.secret-key.XXXXXX")"
    python -c 'import secrets; print(secrets.token_urlsafe(50))' >"$scratch"
    ln "$scratch" "$DJANGO_SECRET_KEY_FILE" 2>/dev/null ||
      mv -n "$scratch" "$DJANGO_SECRET_KEY_FILE" 2>/dev/null || true
    rm -f "$scratch"
  fi
  export DJANGO_SECRET_KEY_FILE
fi
