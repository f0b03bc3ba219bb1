#!/usr/bin/env bash
# pool-user.sh <pool> [<vhost>]: the RabbitMQ user of a lab pool's agents.
#
# Creates the user pool-<pool> (or changes its password), with no tags, and
# permits it on <vhost> (default reprogate) the queue pool.<pool>, its hosts' own
# queues pool.<pool>.host.<worker name> and the direct exchanges of the same
# names, and nothing else: configure, write and read are all
# ^pool\.<pool>(\.host\.[A-Za-z0-9._@-]+)?$ (benchmarks.lib.queues.pool_permission;
# docs/broker.md says why each is needed).
#
# The password is the first line of stdin when stdin is not a terminal and not
# empty; otherwise one is generated and printed once on stdout (the only line on
# stdout). Messages go to stderr.
#
#   deploy/rabbitmq/pool-user.sh gpu-a reprogate            # prints the password
#   deploy/rabbitmq/pool-user.sh gpu-a reprogate < pw.txt   # sets the one in pw.txt
#
# RABBITMQCTL names the command to run (default rabbitmqctl).
set -euo pipefail
# shellcheck source=deploy/rabbitmq/_common.sh
. "$(dirname "$0")/_common.sh"

[ $# -ge 1 ] && [ $# -le 2 ] || die "usage: pool-user.sh <pool> [<vhost>]"
pool="$1"
vhost="${2-reprogate}"
# The pool name rule of benchmarks.lib.queues.POOL_NAME_PATTERN: no regex
# metacharacter can get into the permission patterns below.
[[ "$pool" =~ ^[a-z0-9][a-z0-9-]{0,62}$ ]] ||
  die "pool name '$pool' must be lowercase letters, digits and dashes (at most 63)"
[ -n "$vhost" ] || die "the vhost must not be empty"

user="pool-$pool"
only="^pool\\.${pool}(\\.host\\.[A-Za-z0-9._@-]+)?\$"
read_or_generate_password
vhost_ensure "$vhost"
user_put "$user"
ctl set_permissions -p "$vhost" -- "$user" "$only" "$only" "$only" >/dev/null
echo "user $user on vhost $vhost: configure, write, read $only" >&2
if [ "$generated" = 1 ]; then
  printf '%s\n' "$password"
fi
