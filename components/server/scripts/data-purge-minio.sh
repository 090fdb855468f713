#!/bin/sh
# MinIO part of a personal robot's data purge (components/server/datapurge.go), run by mc.
#
# The robot's user goes first, so it can write nothing more; then its policy, then its bucket
# with every object in it. Each step accepts "already gone", so a re-run converges.
set -eu

gone() {
	case "$1" in
	*"does not exist"* | *NoSuchBucket* | *"not found"* | *XMinioAdminNoSuchUser* | *XMinioAdminNoSuchPolicy*) return 0 ;;
	*) return 1 ;;
	esac
}

step() {
	if ! out=$("$@" 2>&1); then
		if gone "$out"; then
			return 0
		fi
		echo "$out" >&2
		exit 1
	fi
}

step mc admin user remove tenant "$ROBOT_USER"
step mc admin policy remove tenant "$POLICY"
step mc rb --force "tenant/$BUCKET"
echo "data-purge: MinIO user $ROBOT_USER and bucket $BUCKET removed"
