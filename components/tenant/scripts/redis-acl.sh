#!/bin/sh
# The Redis ACL file of a personal job type's shared Redis (written by the TFRS operator).
# `init` writes it before redis-server starts; `sync` runs beside redis-server and writes it
# again, then ACL LOAD, whenever the robots' users (the keys of the redis-acl Secret, mounted
# at $USERS_DIR) or the default password change. Only lines of the exact shape TFRS writes
# (ACL_LINE) are taken. No password is written or printed: the default user's is hashed.
set -eu
ACL_FILE=${ACL_FILE:-/acl/users.acl}

render() {
	hash=$(printf '%s' "$REDIS_PASSWORD" | sha256sum | cut -d' ' -f1)
	{
		printf 'user default on #%s ~* &* +@all\n' "$hash"
		for f in "$USERS_DIR"/*.acl; do
			[ -f "$f" ] || continue
			grep -E "$ACL_LINE" "$f" || echo "redis-acl: skipped $(basename "$f"): not a robot user line" >&2
		done
	} >"$1"
}

case "${1:-}" in
init)
	render "$ACL_FILE"
	;;
sync)
	loaded=""
	while true; do
		render "$ACL_FILE.new"
		now=$(sha256sum <"$ACL_FILE.new")
		if [ "$now" != "$loaded" ]; then
			mv "$ACL_FILE.new" "$ACL_FILE"
			# A failed load (redis-server still starting) keeps the users it has and is
			# tried again on the next round.
			out=$(REDISCLI_AUTH="$REDIS_PASSWORD" redis-cli --no-auth-warning ACL LOAD 2>&1 || true)
			if [ "$out" = "OK" ]; then
				loaded=$now
				echo "redis-acl: loaded $(grep -c '^user ' "$ACL_FILE") users"
			else
				echo "redis-acl: ACL LOAD failed; retrying" >&2
			fi
		fi
		sleep "${SYNC_SECONDS:-5}"
	done
	;;
*)
	echo "usage: redis-acl.sh init|sync" >&2
	exit 2
	;;
esac
