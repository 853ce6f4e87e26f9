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

{{/*
The rules of the receiver's configuration that tie two keys together, or
that a JSON schema cannot state, checked on the receiver block as the chart
renders it (kafka.*, coordination.* and receiver merged; the dict is the
argument). Each names the value to change, as `validate` names the key.
*/}}
{{- define "kafkatimelag.checkMergedReceiver" -}}
{{- $r := . -}}
{{- /* protocol_version: its spelling is the schema's; the floors are these */ -}}
{{- with $r.protocol_version -}}
{{- $v := trimPrefix "v" (trim (toString .)) -}}
{{- $below := "" -}}
{{- if hasPrefix "0." $v -}}{{- $below = "1.1.0" -}}
{{- else if semverCompare "<1.1.0" $v -}}{{- $below = "1.1.0" -}}
{{- end -}}
{{- if $below -}}
{{- fail (printf "receiver.protocol_version: must be 1.1.0 or later, the oldest the receiver's requests work at, got %s" .) -}}
{{- end -}}
{{- if and $r.coordination.group_id (semverCompare "<2.4.0" $v) -}}
{{- fail (printf "receiver.protocol_version: the replicas' coordination (coordination.groupId; the chart always sets it) needs 2.4.0 or later (cooperative rebalancing), got %s" .) -}}
{{- end -}}
{{- if and $r.rack_id (semverCompare "<2.3.0" $v) -}}
{{- fail (printf "receiver.rack_id: needs receiver.protocol_version 2.3.0 or later (Fetch v11, KIP-392), got %s" .) -}}
{{- end -}}
{{- end -}}
{{- if and (hasKey $r "max_record_read_bytes_per_scrape") (eq (toString $r.timestamp_source) "record_reads") -}}
{{- fail "receiver.max_record_read_bytes_per_scrape: applies with timestamp_source \"time_index\", where records are read only where the time index cannot answer; with \"record_reads\", max_record_reads_per_scrape bounds the reads" -}}
{{- end -}}
{{- with $r.coordination -}}
{{- if and .group_id .session_timeout .heartbeat_interval -}}
{{- $session := include "kafkatimelag.durationNanos" (toString .session_timeout) | float64 -}}
{{- $heartbeat := include "kafkatimelag.durationNanos" (toString .heartbeat_interval) | float64 -}}
{{- if gt (mulf 3 $heartbeat) $session -}}
{{- fail (printf "coordination.heartbeatInterval: must be at most a third of coordination.sessionTimeout (%s), got %s" (toString .session_timeout) (toString .heartbeat_interval)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- range $filter := list "groups" "topics" -}}
{{- range $list := list "include" "exclude" -}}
{{- range (dig $filter $list list $r) -}}
{{- include (printf "receiver.%s.%s: each entry is a Go regular expression (RE2)" $filter $list) . -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- with $r.auth -}}
{{- if and .sasl .kerberos -}}
{{- fail "receiver.auth: only one of sasl (kafka.sasl sets it) or kerberos can be configured" -}}
{{- end -}}
{{- with .sasl -}}
{{- include "kafkatimelag.checkSASL" . -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The regular expressions of receiver.groups and receiver.topics: a
template named after the key, so that the error of one Go cannot read names
it. */}}
{{- define "receiver.groups.include: each entry is a Go regular expression (RE2)" }}{{ $_ := mustRegexMatch . "" }}{{ end -}}
{{- define "receiver.groups.exclude: each entry is a Go regular expression (RE2)" }}{{ $_ := mustRegexMatch . "" }}{{ end -}}
{{- define "receiver.topics.include: each entry is a Go regular expression (RE2)" }}{{ $_ := mustRegexMatch . "" }}{{ end -}}
{{- define "receiver.topics.exclude: each entry is a Go regular expression (RE2)" }}{{ $_ := mustRegexMatch . "" }}{{ end -}}

{{/* The SASL block as the chart renders it (kafka.sasl with receiver.auth.sasl
over it): what each mechanism needs and refuses. */}}
{{- define "kafkatimelag.checkSASL" -}}
{{- $m := upper (trim (toString .mechanism)) -}}
{{- $key := "receiver.auth.sasl" -}}
{{- if not $m -}}
{{- fail (printf "%s.mechanism: must be set (kafka.sasl.mechanism or receiver.auth.sasl.mechanism) to PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER or AWS_MSK_IAM_OAUTHBEARER" $key) -}}
{{- end -}}
{{- $token := has $m (list "OAUTHBEARER" "AWS_MSK_IAM_OAUTHBEARER") -}}
{{- if $token -}}
{{- if .username }}{{ fail (printf "%s.username: not used by %s (the token names the principal); remove it" $key $m) }}{{ end -}}
{{- if .password }}{{ fail (printf "%s.password: not used by %s; remove it" $key $m) }}{{ end -}}
{{- if and (hasKey . "version") (eq (toString .version) "0") }}{{ fail (printf "%s.version: %s needs the version 1 handshake (KIP-152); remove version: 0" $key $m) }}{{ end -}}
{{- else -}}
{{- if not .username }}{{ fail (printf "%s.username: must be set for %s (kafka.sasl.username)" $key $m) }}{{ end -}}
{{- if not .password }}{{ fail (printf "%s.password: must be set for %s (kafka.sasl.passwordSecret)" $key $m) }}{{ end -}}
{{- end -}}
{{- $region := dig "aws_msk" "region" "" . -}}
{{- if and (eq $m "AWS_MSK_IAM_OAUTHBEARER") (not $region) }}{{ fail (printf "%s.aws_msk.region: must be set for %s (kafka.sasl.awsRegion)" $key $m) }}{{ end -}}
{{- if and (ne $m "AWS_MSK_IAM_OAUTHBEARER") $region }}{{ fail (printf "%s.aws_msk.region: used only by AWS_MSK_IAM_OAUTHBEARER; remove it" $key) }}{{ end -}}
{{- $source := .oauthbearer_token_source -}}
{{- $grant := dig "oauthbearer" "token_url" "" . -}}
{{- if eq $m "OAUTHBEARER" -}}
{{- if and (not $source) (not $grant) }}{{ fail (printf "%s.oauthbearer_token_source: must name the extension that supplies the tokens (or set kafka.sasl.oauthbearer.tokenURL) for OAUTHBEARER" $key) }}{{ end -}}
{{- if and $source $grant }}{{ fail (printf "%s.oauthbearer_token_source: set it or the token URL (kafka.sasl.oauthbearer.tokenURL), not both" $key) }}{{ end -}}
{{- else -}}
{{- if $source }}{{ fail (printf "%s.oauthbearer_token_source: used only by OAUTHBEARER; remove it" $key) }}{{ end -}}
{{- if .oauthbearer }}{{ fail (printf "%s.oauthbearer: used only by OAUTHBEARER; remove it" $key) }}{{ end -}}
{{- end -}}
{{- end -}}
