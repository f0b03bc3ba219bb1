# Sourced by scripts/run and scripts/manage after scripts/_venv.sh (which cd's to the
# repository): the embedded default's environment. A variable set beforehand wins.
#   DJANGO_DEBUG       True (the embedded default; production runs with it off)
#   REPROGATE_HOST     127.0.0.1, the address runserver listens on
#   REPROGATE_PORT     8000, its port; links in notifications follow the two
#   REPROGATE_VAR_DIR  var, where SQLite, files, keys and the broker live (made
#                      if missing; a relative path is from the repository)
export DJANGO_DEBUG="${DJANGO_DEBUG:-True}"
export REPROGATE_HOST="${REPROGATE_HOST:-127.0.0.1}"
export REPROGATE_PORT="${REPROGATE_PORT:-8000}"
export REPROGATE_VAR_DIR="${REPROGATE_VAR_DIR:-var}"
mkdir -p "$REPROGATE_VAR_DIR"
REPROGATE_VAR_DIR="$(cd "$REPROGATE_VAR_DIR" && pwd)"
