{{/* Names: the release name, or release-chart when the release name does not say tfrs. */}}
{{- define "tfrs.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "tfrs.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "tfrs.operatorName" -}}{{ include "tfrs.fullname" . }}-operator{{- end -}}
{{- define "tfrs.apiName" -}}{{ include "tfrs.fullname" . }}-api{{- end -}}

{{- define "tfrs.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "tfrs.name" . }}
app.kubernetes.io/part-of: tfrs
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Selector labels of one component: "operator" or "api". */}}
{{- define "tfrs.selector" -}}
app.kubernetes.io/name: {{ include "tfrs.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "tfrs.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- if eq $tag "latest" -}}{{- fail "image.tag: a versioned tag, never latest (default: the chart's appVersion)" -}}{{- end -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{- define "tfrs.passphraseSecret" -}}
{{- if .Values.passphrase.existingSecret -}}{{ .Values.passphrase.existingSecret }}{{- else -}}{{ include "tfrs.fullname" . }}-passphrase{{- end -}}
{{- end -}}

{{- define "tfrs.stateClaim" -}}
{{- if .Values.persistence.existingClaim -}}{{ .Values.persistence.existingClaim }}{{- else -}}{{ include "tfrs.fullname" . }}-state{{- end -}}
{{- end -}}

{{/* A careless value fails the render with the value's name, before anything is applied. */}}
{{- define "tfrs.validate" -}}
{{- $v := .Values -}}
{{- if not (has $v.backend.type (list "file" "s3")) -}}
{{- fail (printf "backend.type: must be file or s3, not %q" $v.backend.type) -}}
{{- end -}}
{{- if eq $v.backend.type "s3" -}}
{{- if not (hasPrefix "s3://" $v.backend.s3.url) -}}{{- fail "backend.s3.url: an s3://BUCKET?endpoint=… URL is required with backend.type=s3" -}}{{- end -}}
{{- if not $v.backend.s3.existingSecret -}}{{- fail "backend.s3.existingSecret: the Secret with the AWS credentials is required with backend.type=s3" -}}{{- end -}}
{{- end -}}
{{- if eq $v.backend.secretsProvider "passphrase" -}}
{{- if and (not $v.passphrase.existingSecret) (not $v.passphrase.value) -}}
{{- fail "passphrase: set passphrase.existingSecret (recommended) or passphrase.value; it protects the secrets in the state and must never change" -}}
{{- end -}}
{{- end -}}
{{- /* One volume, many pods: a ReadWriteOnce file state holds exactly one operator pod. */ -}}
{{- $rwo := and (eq $v.backend.type "file") (not (has "ReadWriteMany" $v.persistence.accessModes)) -}}
{{- if lt (int $v.operator.replicas) 1 -}}
{{- fail (printf "operator.replicas: at least 1, not %v" $v.operator.replicas) -}}
{{- end -}}
{{- if and $rwo (gt (int $v.operator.replicas) 1) -}}
{{- fail "operator.replicas: more than one replica on the file backend needs persistence.accessModes [ReadWriteMany], or backend.type=s3" -}}
{{- end -}}
{{- if and (gt (int $v.operator.replicas) 1) (not $v.operator.leaderElect) -}}
{{- fail "operator.replicas: more than one replica needs operator.leaderElect=true (only the Lease holder may run stack operations)" -}}
{{- end -}}
{{- /* Only a claim the user named: `--reuse-values` from an older chart carries its defaults. */ -}}
{{- if and (hasKey $v.api "persistence") (dig "existingClaim" "" ($v.api.persistence | default dict)) -}}
{{- fail "api.persistence: removed; the API keeps its specs and operation records in the state backend (tfrs/api/), not on a volume of its own" -}}
{{- end -}}
{{- if $v.api.enabled -}}
{{- if lt (int $v.api.replicas) 1 -}}
{{- fail (printf "api.replicas: at least 1, not %v" $v.api.replicas) -}}
{{- end -}}
{{- if and $rwo (gt (int $v.api.replicas) 1) -}}
{{- fail "api.replicas: more than one API replica on the file backend needs persistence.accessModes [ReadWriteMany], or backend.type=s3" -}}
{{- end -}}
{{- if $rwo -}}
{{- fail "api.enabled: the API shares the operator's state; on the file backend that needs persistence.accessModes [ReadWriteMany], else use backend.type=s3" -}}
{{- end -}}
{{- if and (not $v.api.tokens.existingSecret) (not $v.api.extraArgs) -}}
{{- fail "api.tokens.existingSecret: the API refuses to serve without bearer tokens (or configure another authentication with api.extraArgs)" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Environment both doors share: the backend, its credentials, scratch and home dirs. */}}
{{- define "tfrs.env" -}}
- name: TFRS_BACKEND
{{- if eq .Values.backend.type "s3" }}
  value: {{ .Values.backend.s3.url | quote }}
- name: AWS_ACCESS_KEY_ID
  valueFrom:
    secretKeyRef: {name: {{ .Values.backend.s3.existingSecret | quote }}, key: {{ .Values.backend.s3.accessKeyIDKey | quote }}}
- name: AWS_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef: {name: {{ .Values.backend.s3.existingSecret | quote }}, key: {{ .Values.backend.s3.secretAccessKeyKey | quote }}}
{{- else }}
  value: file:///var/lib/tfrs-state/backend
{{- end }}
{{- if ne .Values.backend.secretsProvider "passphrase" }}
- name: TFRS_SECRETS_PROVIDER
  value: {{ .Values.backend.secretsProvider | quote }}
{{- end }}
- name: TFRS_STATE_DIR
  value: /var/lib/tfrs
- name: HOME
  value: /home/tfrs
- name: TMPDIR
  value: /tmp
- name: PULUMI_SKIP_UPDATE_CHECK
  value: "true"
{{- /* Who this pod is: recorded beside every backend lock it takes, so after a node loss the
new leader can prove the pod gone and break its lock (README: Backend locks). */}}
- name: POD_NAMESPACE
  valueFrom:
    fieldRef: {fieldPath: metadata.namespace}
- name: POD_NAME
  valueFrom:
    fieldRef: {fieldPath: metadata.name}
- name: POD_UID
  valueFrom:
    fieldRef: {fieldPath: metadata.uid}
{{- end -}}

{{- define "tfrs.passphraseArgs" -}}
{{- if eq .Values.backend.secretsProvider "passphrase" -}}
- --passphrase-file=/etc/tfrs/passphrase/{{ .Values.passphrase.key }}
{{- end -}}
{{- end -}}

{{/* Writable dirs on a read-only root: work (state dir: PULUMI_HOME, workspaces), tmp, home. */}}
{{- define "tfrs.scratchMounts" -}}
- {name: work, mountPath: /var/lib/tfrs}
- {name: tmp, mountPath: /tmp}
- {name: home, mountPath: /home/tfrs}
{{- if eq .Values.backend.secretsProvider "passphrase" }}
- {name: passphrase, mountPath: /etc/tfrs/passphrase, readOnly: true}
{{- end }}
{{- if eq .Values.backend.type "file" }}
- {name: state, mountPath: /var/lib/tfrs-state}
{{- end }}
{{- end -}}

{{- define "tfrs.scratchVolumes" -}}
- {name: work, emptyDir: {}}
- {name: tmp, emptyDir: {}}
- {name: home, emptyDir: {}}
{{- if eq .Values.backend.secretsProvider "passphrase" }}
- name: passphrase
  secret:
    secretName: {{ include "tfrs.passphraseSecret" . }}
    defaultMode: 0440
    items: [{key: {{ .Values.passphrase.key | quote }}, path: {{ .Values.passphrase.key | quote }}}]
{{- end }}
{{- if eq .Values.backend.type "file" }}
- name: state
  persistentVolumeClaim:
    claimName: {{ include "tfrs.stateClaim" . }}
{{- end }}
{{- end -}}

{{/* An HTTP probe of the API, over HTTPS when it serves TLS. */}}
{{- define "tfrs.probeScheme" -}}
{{- $p := deepCopy .probe -}}
{{- if and .tls $p.httpGet -}}{{- $_ := set $p.httpGet "scheme" "HTTPS" -}}{{- end -}}
{{- toYaml $p -}}
{{- end -}}


{{/* The pod's affinity: the user's, else a soft anti-affinity that spreads the replicas of one
component over nodes, so a node loss takes at most one of them (soft: a one-node cluster still
schedules them all). */}}
{{- define "tfrs.affinity" -}}
{{- if .affinity -}}
{{- toYaml .affinity -}}
{{- else -}}
podAntiAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
  - weight: 100
    podAffinityTerm:
      topologyKey: kubernetes.io/hostname
      labelSelector:
        matchLabels:
          {{- include "tfrs.selector" (dict "root" .root "component" .component) | nindent 10 }}
{{- end -}}
{{- end -}}

{{/* A PodDisruptionBudget for a component with more than one replica. maxUnavailable 1, not
minAvailable 1: a drain evicts one pod at a time whatever the replica count (minAvailable 1
would let it take all but one API replica at once), and a standby operator is always up when
the leader is evicted. With one replica there is none: it would block every drain. */}}
{{- define "tfrs.pdb" -}}
{{- if gt (int .replicas) 1 }}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ .name }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "tfrs.labels" .root | nindent 4 }}
    app.kubernetes.io/component: {{ .component }}
spec:
  maxUnavailable: 1
  selector:
    matchLabels:
      {{- include "tfrs.selector" (dict "root" .root "component" .component) | nindent 6 }}
{{- end }}
{{- end -}}

{{/* The engine's fair share (docs/security/fair-share.md) from a component's values (dict
"name" "operator" "v" .Values.operator): the per-namespace cap when set, and the deadlines as
one --deadline=kind=duration,… flag (keys in order, so the rendered args are stable). The
binary checks kinds and durations; a value that is not a string would render garbage, so it
is refused here. */}}
{{- define "tfrs.fairShareArgs" -}}
{{- $name := .name }}
{{- if .v.parallelPerNamespace }}
- --parallel-per-namespace={{ int .v.parallelPerNamespace }}
{{- end }}
{{- with .v.deadlines }}
{{- $items := list }}
{{- range $kind, $d := . }}
{{- if not (kindIs "string" $d) }}
{{- fail (printf "%s.deadlines.%s: want a duration such as 45m, got %v" $name $kind $d) }}
{{- end }}
{{- $items = append $items (printf "%s=%s" $kind $d) }}
{{- end }}
- --deadline={{ join "," $items }}
{{- end }}
{{- end -}}
