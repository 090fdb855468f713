#!/bin/sh
# Grafana service account of one robot (components/server/grafanasa.go), run with curl.
#
# Finds the account SA_NAME (or creates it with role SA_ROLE), mints a token and stores it
# under "token" in the Secret TOKEN_SECRET through the Kubernetes API, with the Job's service
# account (allowed get/patch on that one Secret). Grafana's JSON is read with sed: the image
# has no jq, and the fields used (id, name, key) are plain.
set -eu

api() {
	curl -fsS -u "$GRAFANA_USER:$GRAFANA_PASSWORD" -H 'Content-Type: application/json' "$@"
}

# One account object per line; the exact name match keeps "r-1" from matching "r-10".
id=$(api "$GRAFANA_URL/api/serviceaccounts/search?query=$SA_NAME" | tr '{' '\n' |
	sed -n 's/^"id":\([0-9][0-9]*\),"name":"'"$SA_NAME"'".*/\1/p' | head -n 1)
if [ -z "$id" ]; then
	id=$(api -X POST "$GRAFANA_URL/api/serviceaccounts" -d "{\"name\":\"$SA_NAME\",\"role\":\"$SA_ROLE\"}" |
		sed -n 's/^{"id":\([0-9][0-9]*\),.*/\1/p')
fi
if [ -z "$id" ]; then
	echo "grafana-sa: cannot find or create service account $SA_NAME" >&2
	exit 1
fi

# Token names must be unique per account; the pod name is, across re-runs and retries.
token=$(api -X POST "$GRAFANA_URL/api/serviceaccounts/$id/tokens" -d "{\"name\":\"$HOSTNAME\"}" |
	sed -n 's/.*"key":"\([^"]*\)".*/\1/p')
if [ -z "$token" ]; then
	echo "grafana-sa: Grafana returned no token for $SA_NAME" >&2
	exit 1
fi

sa=/var/run/secrets/kubernetes.io/serviceaccount
curl -fsS --cacert "$sa/ca.crt" -H "Authorization: Bearer $(cat "$sa/token")" \
	-H 'Content-Type: application/merge-patch+json' -X PATCH \
	"https://kubernetes.default.svc/api/v1/namespaces/$(cat "$sa/namespace")/secrets/$TOKEN_SECRET" \
	-d "{\"stringData\":{\"token\":\"$token\"}}" >/dev/null
echo "grafana-sa: token of $SA_NAME stored in $TOKEN_SECRET"
