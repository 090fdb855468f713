#!/bin/sh
# Redis part of a personal robot's data purge (components/server/datapurge.go), run by
# redis-cli with the tenant's default login (REDISCLI_AUTH).
#
# The robot's ACL user goes first (its line has already left the ACL Secret; this takes it
# out of the running server at once), then every key under its prefix. The keys are removed
# by a script that scans one batch per call, so Redis is never blocked for long and a key
# with any byte in its name (a newline included) is matched by the server, not by this shell.
set -eu

r() { redis-cli --no-auth-warning -h "$REDIS_HOST" -p "$REDIS_PORT" "$@"; }

r ACL DELUSER "$ROBOT_USER" >/dev/null
batch=$(cat /tfrs-job/purge.lua)
cursor=0
total=0
while :; do
	out=$(r EVAL "$batch" 0 "$cursor" "$PATTERN")
	cursor=$(printf '%s\n' "$out" | sed -n 1p)
	n=$(printf '%s\n' "$out" | sed -n 2p)
	case "$cursor$n" in
	*[!0-9]* | "")
		echo "data-purge: unexpected answer from Redis: $out" >&2
		exit 1
		;;
	esac
	total=$((total + n))
	[ "$cursor" = 0 ] && break
done
echo "data-purge: Redis user $ROBOT_USER and $total keys under its prefix removed"
