#!/usr/bin/env bash
# Build the two example bundles for RFP-DEMO-1 with `reprogate bundle build`.
#
#   examples/build.sh [--register] OUTDIR [KEYDIR]
#
# Writes OUTDIR/acme-flash.tar.gz and OUTDIR/bolt-storage.tar.gz, each signed with
# its vendor's key KEYDIR/<vendor> (an unencrypted OpenSSH private key), plus
# OUTDIR/<vendor>.pub and OUTDIR/allowed_signers, checks both bundles with
# `reprogate bundle verify`, and prints one line per vendor:
#
#   <vendor> <public key line>
#
# which is what the vendor registers as its signing key (see --register).
# A missing key is generated (ssh-keygen -t ed25519 -N ''): into KEYDIR if given,
# so later builds reuse it; otherwise into a temporary folder deleted on exit (a
# throwaway key). Private keys never go into the repository.
# Set SOURCE_DATE_EPOCH for reproducible bytes (same sources + key -> same file).
#
# --register (needs KEYDIR) also registers both public keys with a running demo
# server ($REPROGATE_URL, else http://127.0.0.1:8000, as scripts/run serves): it
# logs in as the demo vendors vendor-a (acme-flash) and vendor-b (bolt-storage)
# with $REPROGATE_PASSWORD, else the demo password, and runs `reprogate key
# register`; a key registered before is fine. Bundles signed with KEYDIR's keys
# are then accepted on upload.
set -euo pipefail

VENDORS=(acme-flash bolt-storage)
declare -A DEMO_USERS=([acme-flash]=vendor-a [bolt-storage]=vendor-b)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")

usage() {
    sed -n '2,25p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

register=
if [[ ${1:-} == --register ]]; then
    register=yes
    shift
fi
[[ $# -ge 1 && $# -le 2 && $1 != -* ]] || usage
outdir=$1
keydir=${2:-}
if [[ -n $register && -z $keydir ]]; then
    echo "examples/build.sh: --register needs KEYDIR (a throwaway key signs nothing later)" >&2
    exit 2
fi

if [[ -x $root/.venv/bin/reprogate ]]; then
    reprogate=("$root/.venv/bin/reprogate")
elif [[ -x $root/.venv/bin/python ]]; then
    reprogate=("$root/.venv/bin/python" -m reprogate_cli.main)
else
    reprogate=(python3 -m reprogate_cli.main)
fi
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"

mkdir -p "$outdir"
if [[ -z $keydir ]]; then
    keydir=$(mktemp -d "${TMPDIR:-/tmp}/reprogate-example-keys.XXXXXX")
    trap 'rm -rf "$keydir"' EXIT
else
    mkdir -p "$keydir"
fi

: >"$outdir/allowed_signers"
for vendor in "${VENDORS[@]}"; do
    key=$keydir/$vendor
    if [[ ! -f $key ]]; then
        ssh-keygen -q -t ed25519 -N '' -C "$vendor@example" -f "$key"
    fi
    ssh-keygen -y -f "$key" >"$outdir/$vendor.pub" # the public half, with its comment
    printf '%s namespaces="reprogate-bundle" %s\n' "$vendor" "$(cat "$outdir/$vendor.pub")" \
        >>"$outdir/allowed_signers"

    "${reprogate[@]}" bundle build "$here/$vendor" --key "$key" \
        -o "$outdir/$vendor.tar.gz" >&2
done

for vendor in "${VENDORS[@]}"; do
    "${reprogate[@]}" bundle verify "$outdir/$vendor.tar.gz" \
        --allowed-signers "$outdir/allowed_signers" --principal "$vendor" >&2
    printf '%s %s\n' "$vendor" "$(cat "$outdir/$vendor.pub")"
done

if [[ -n $register ]]; then
    export REPROGATE_PASSWORD=${REPROGATE_PASSWORD:-reprogate-demo}
    for vendor in "${VENDORS[@]}"; do
        user=${DEMO_USERS[$vendor]}
        errors=$(mktemp)
        if ! token=$("${reprogate[@]}" login --username "$user" \
            --name "examples/build.sh" 2>"$errors"); then
            cat "$errors" >&2
            rm -f "$errors"
            echo "examples/build.sh: cannot log in as $user at" \
                "${REPROGATE_URL:-http://127.0.0.1:8000}: is scripts/run running" \
                "there (else set REPROGATE_URL)?" >&2
            exit 2
        fi
        rm -f "$errors"
        "${reprogate[@]}" key register "$outdir/$vendor.pub" --token "$token" >&2
    done
fi
