{{- /*
The merge upstream's zzz_profile.yaml does: the chart defaults under
_internal_defaults_do_not_set, then the user's values over them. Templates call
"gateway.values" instead of reading .Values directly.
*/ -}}
{{- define "gateway.values" -}}
{{- $d := deepCopy (index .Values "_internal_defaults_do_not_set" | default dict) -}}
{{- $u := omit (deepCopy .Values) "_internal_defaults_do_not_set" -}}
{{- mustMergeOverwrite $d $u | toYaml -}}
{{- end -}}
{{- define "gateway.name" -}}
{{- $v := include "gateway.values" . | fromYaml -}}
{{- $v.name | default .Release.Name -}}
{{- end -}}
