# Shared by pool-user.sh and server-user.sh (sourced, not run).
# RABBITMQCTL names the command (default rabbitmqctl), split on spaces, e.g.
# RABBITMQCTL="docker compose exec -T rabbitmq rabbitmqctl".

die() {
  echo "$(basename "$0"): $*" >&2
  exit 2
}

ctl() {
  # shellcheck disable=SC2086  # RABBITMQCTL may be a command with arguments
  ${RABBITMQCTL:-rabbitmqctl} "$@"
}

# The password: one line on stdin when stdin is not a terminal and not empty;
# otherwise 32 random hex characters (URL-safe, so it goes into amqp://… as is),
# printed once on stdout. Sets $password and $generated.
read_or_generate_password() {
  password=""
  generated=0
  if [ ! -t 0 ]; then
    IFS= read -r password || true
  fi
  if [ -z "$password" ]; then
    password="$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')"
    generated=1
  elif [ "${#password}" -lt 16 ]; then
    die "the password on stdin is shorter than 16 characters"
  fi
}

# Creates the user, or changes its password; the password goes through stdin,
# never the command line (where ps would show it). A user made here has no
# tags; an existing one loses its own: no management or administrator rights.
user_put() {
  local user="$1"
  if ctl list_users --silent | cut -f1 | grep -Fxq -- "$user"; then
    printf '%s\n' "$password" | ctl change_password -- "$user" >/dev/null
    ctl set_user_tags -- "$user" >/dev/null
    echo "user $user: password changed, tags cleared" >&2
  else
    printf '%s\n' "$password" | ctl add_user -- "$user" >/dev/null
    echo "user $user: created (no tags)" >&2
  fi
}

vhost_ensure() {
  local vhost="$1"
  if ! ctl list_vhosts --silent | grep -Fxq -- "$vhost"; then
    ctl add_vhost -- "$vhost" >/dev/null
    echo "vhost $vhost: created" >&2
  fi
}
