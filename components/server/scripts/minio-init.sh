#!/bin/sh
# MinIO init of one robot (components/server/minioinit.go), run by the image's mc.
#
# The tenant's MinIO is the mc alias "tenant": MC_HOST_tenant carries its URL with the root
# login, from the Job's Secret. Every step is idempotent, so a re-run (the Job is replaced
# whenever its inputs change) converges instead of failing.
set -eu

mc mb --ignore-existing "tenant/$BUCKET"

# A robot of a personal tenant gets its own user, allowed only its own bucket.
if [ -n "${ROBOT_USER:-}" ]; then
	mc admin user add tenant "$ROBOT_USER" "$ROBOT_SECRET_KEY"
	mc admin policy create tenant "$POLICY" /tfrs-job/policy.json
	if ! out=$(mc admin policy attach tenant "$POLICY" --user "$ROBOT_USER" 2>&1); then
		case "$out" in
		*"already in effect"*) ;;
		*)
			echo "$out" >&2
			exit 1
			;;
		esac
	fi
fi
echo "minio-init: bucket $BUCKET ready"
