{{/*
The receiver block's durations against the receiver's own ranges, which a
JSON schema cannot compare: values.schema.json has already refused unknown
keys, wrong types and durations without a unit (its `receiver` property and
files/receiver-durations.json are generated from the receiver's
configuration by kafkatimelagreceiver/cmd/chartschema). Fails naming the
key, as `otelcol-kafkatimelag validate` would at the pod's start.
*/}}
{{- define "kafkatimelag.checkReceiver" -}}
{{- $ranges := .Files.Get "files/receiver-durations.json" | fromJson -}}
{{- $written := dict -}}
{{- range $key, $r := $ranges -}}
{{- $v := $.Values.receiver -}}
{{- range splitList "::" $key -}}
{{- if kindIs "map" $v }}{{ $v = get $v . }}{{ else }}{{ $v = "" }}{{ end -}}
{{- end -}}
{{- $name := printf "receiver.%s" (replace "::" "." $key) -}}
{{- if and (not (kindIs "string" $v)) (not (kindIs "invalid" $v)) (ne (toString $v) "0") -}}
{{- /* a number: nanoseconds to the collector, never what was meant */ -}}
{{- $unit := "s" -}}
{{- if $r.range -}}
{{- range $u := list "s" "ms" "m" "h" -}}
{{- $ns := include "kafkatimelag.durationNanos" (printf "%v%s" $v $u) | float64 -}}
{{- if and (ge $ns (float64 $r.min)) (or (eq (float64 $r.max) 0.0) (le $ns (float64 $r.max))) -}}{{ $unit = $u }}{{ break }}{{- end -}}
{{- end -}}
{{- end -}}
{{- fail (printf "%s: %v has no unit, and a duration without one is read as nanoseconds; write %v%s" $name $v $v $unit) -}}
{{- else if and (kindIs "string" $v) (ne $v "") $r.range -}}
{{- $ns := include "kafkatimelag.durationNanos" $v | float64 -}}
{{- $_ := set $written $key $ns -}}
{{- $zero := and (eq $ns 0.0) $r.zeroMeans -}}
{{- if and (not $zero) (or (lt $ns (float64 $r.min)) (and (gt (float64 $r.max) 0.0) (gt $ns (float64 $r.max)))) -}}
{{- fail (printf "%s: must be %s, got %s" $name $r.range $v) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- with $.Values.receiver.sampling_interval -}}
{{- $collection := get $written "collection_interval" | default 30e9 -}}
{{- if gt (float64 (get $written "sampling_interval")) (float64 $collection) -}}
{{- fail (printf "receiver.sampling_interval: %s is longer than receiver.collection_interval (%s): every scrape already adds a point to the tables; set it to at most that, or leave it out" . ($.Values.receiver.collection_interval | default "30s")) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* kafkatimelag.durationNanos: a duration string (checked by the schema's
pattern) in nanoseconds. */}}
{{- define "kafkatimelag.durationNanos" -}}
{{- $units := dict "ns" 1.0 "us" 1e3 "µs" 1e3 "ms" 1e6 "s" 1e9 "m" 60e9 "h" 3600e9 -}}
{{- $total := 0.0 -}}
{{- range regexFindAll "[0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h)" . -1 -}}
{{- $number := regexFind "^[0-9]+(\\.[0-9]+)?" . -}}
{{- $total = addf $total (mulf (float64 $number) (get $units (trimPrefix $number .))) -}}
{{- end -}}
{{- printf "%.0f" $total -}}
{{- end -}}
