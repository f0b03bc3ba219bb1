#!/usr/bin/env bash
# Makes the secret files compose.yaml hands to its containers, in deploy/secrets/
# (or the directory given): random passwords, and the URLs and RabbitMQ settings
# that carry them. A file already there is kept, so running it again changes
# nothing; delete a file to make it anew. The lab agent's two files start as
# placeholders: put the host token (manage.py pool_join) and the pool's broker URL
# (deploy/rabbitmq/) in them.
set -euo pipefail
dir="${1:-$(dirname "$0")/secrets}"
# Compose bind-mounts each file into its container as it is on this machine: the
# files are readable there by the service's own user (0644), and the directory
# (0700) keeps them from other users here.
mkdir -p "$dir"
chmod 700 "$dir"
umask 022
[ -f "$dir/.gitignore" ] || printf '*\n' >"$dir/.gitignore"

random() { head -c 32 /dev/urandom | base64 | tr -d '/+=\n' | head -c 40; }
# put NAME VALUE: writes the file unless it exists; prints what it did.
put() {
  if [ -e "$dir/$1" ]; then
    echo "kept  $dir/$1"
  else
    printf '%s\n' "$2" >"$dir/$1"
    echo "wrote $dir/$1"
  fi
}
# read_or NAME: the file's first line (an earlier run's password), else a new one.
read_or() { if [ -e "$dir/$1" ]; then head -n 1 "$dir/$1"; else random; fi; }

pg_password="$(read_or postgres_password)"
rabbit_password="$(grep -s '^default_pass' "$dir/rabbitmq.conf" | cut -d= -f2 | tr -d ' ' || true)"
[ -n "$rabbit_password" ] || rabbit_password="$(random)"

put django_secret_key "$(random)$(random)"
put postgres_password "$pg_password"
put database_url "postgres://reprogate:${pg_password}@db:5432/reprogate"
put rabbitmq.conf "$(printf 'default_user = reprogate\ndefault_pass = %s\n' "$rabbit_password")"
put celery_broker_url "amqp://reprogate:${rabbit_password}@rabbitmq:5672//"
put minio_root_user "reprogate"
put minio_root_password "$(read_or minio_root_password)"
put agent_host_token "rgh_replace-with-the-token-of-manage.py-pool_join"
put agent_broker_url "amqp://pool-local:replace-with-its-password@rabbitmq:5672//"
