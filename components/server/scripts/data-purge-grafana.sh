#!/bin/sh
# Grafana part of a personal robot's data purge (components/server/datapurge.go), run with
# curl: the robot's service account, with every token it holds, goes. Found by exact name,
# as grafana-sa.sh finds it; none found is "already gone".
set -eu

api() {
	curl -fsS -u "$GRAFANA_USER:$GRAFANA_PASSWORD" -H 'Content-Type: application/json' "$@"
}

ids=$(api "$GRAFANA_URL/api/serviceaccounts/search?query=$SA_NAME" | tr '{' '\n' |
	sed -n 's/^"id":\([0-9][0-9]*\),"name":"'"$SA_NAME"'".*/\1/p')
for id in $ids; do
	api -X DELETE "$GRAFANA_URL/api/serviceaccounts/$id" >/dev/null
done
echo "data-purge: Grafana service account $SA_NAME removed"
