#!/usr/bin/env bash
# server-user.sh [<vhost>] [<user>]: the RabbitMQ user of the server (web, beat
# and its own workers), which sends the runs to every pool's queue.
#
# Creates <vhost> (default reprogate) when missing and the user <user> (default
# reprogate; or changes its password), with no tags, permitted everything on that
# vhost and nothing on any other: it declares the pools' queues when it first
# sends to them, and its own workers use the default queue, events and remote
# control. Lab agents never get this user (pool-user.sh makes theirs).
#
# The password is the first line of stdin when stdin is not a terminal and not
# empty; otherwise one is generated and printed once on stdout (the only line on
# stdout). Messages go to stderr. RABBITMQCTL names the command to run.
set -euo pipefail
# shellcheck source=deploy/rabbitmq/_common.sh
. "$(dirname "$0")/_common.sh"

[ $# -le 2 ] || die "usage: server-user.sh [<vhost>] [<user>]"
vhost="${1-reprogate}"
user="${2-reprogate}"
[ -n "$vhost" ] || die "the vhost must not be empty"
[[ "$user" =~ ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$ ]] || die "user name '$user' is not allowed"
[[ "$user" != pool-* ]] || die "pool-<name> users are the pools' own (pool-user.sh)"

read_or_generate_password
vhost_ensure "$vhost"
user_put "$user"
ctl set_permissions -p "$vhost" -- "$user" '.*' '.*' '.*' >/dev/null
echo "user $user on vhost $vhost: configure, write, read .*" >&2
if [ "$generated" = 1 ]; then
  printf '%s\n' "$password"
fi
