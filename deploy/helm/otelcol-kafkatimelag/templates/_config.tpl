{{/*
The collector configuration: the receiver from kafka.*, coordination.* and
receiver, the exporter from export.*, the health check the probes use, the
collector's own telemetry on 8888; then .Values.config merged over it.
*/}}
{{- define "kafkatimelag.receiverConfig" -}}
{{- $k := .Values.kafka -}}
{{- if not $k.brokers }}{{ fail "kafka.brokers: set the bootstrap brokers (host:port), e.g. --set kafka.brokers={kafka-1:9092}" }}{{ end -}}
brokers: {{ toJson $k.brokers }}
cluster_alias: {{ include "kafkatimelag.clusterAlias" . | quote }}
coordination:
  group_id: {{ default (include "kafkatimelag.fullname" .) .Values.coordination.groupId | quote }}
  session_timeout: {{ .Values.coordination.sessionTimeout }}
  heartbeat_interval: {{ .Values.coordination.heartbeatInterval }}
{{- if not $k.tls.enabled }}
{{- range $value, $set := dict "kafka.tls.caSecret.name" $k.tls.caSecret.name "kafka.tls.clientCertSecret.name" $k.tls.clientCertSecret.name "kafka.tls.serverNameOverride" $k.tls.serverNameOverride "kafka.tls.insecureSkipVerify" $k.tls.insecureSkipVerify }}
{{- if $set }}{{ fail (printf "%s is set but kafka.tls.enabled is false: without TLS it goes unused and the brokers are reached in plaintext; set kafka.tls.enabled=true, or remove %s" $value $value) }}{{ end }}
{{- end }}
{{- end }}
{{- if $k.tls.enabled }}
tls:
  {{- with $k.tls.caSecret.name }}
  ca_file: {{ include "kafkatimelag.caDir" $ }}/{{ $k.tls.caSecret.key }}
  {{- end }}
  {{- with $k.tls.clientCertSecret.name }}
  cert_file: {{ include "kafkatimelag.clientCertDir" $ }}/{{ $k.tls.clientCertSecret.certKey }}
  key_file: {{ include "kafkatimelag.clientCertDir" $ }}/{{ $k.tls.clientCertSecret.keyKey }}
  {{- end }}
  {{- with $k.tls.serverNameOverride }}
  server_name_override: {{ . | quote }}
  {{- end }}
  {{- if $k.tls.insecureSkipVerify }}
  insecure_skip_verify: true
  {{- end }}
{{- end }}
{{- $m := $k.sasl.mechanism }}
{{- if $m }}
auth:
  sasl:
    mechanism: {{ $m }}
    {{- if has $m (list "PLAIN" "SCRAM-SHA-256" "SCRAM-SHA-512") }}
    username: {{ required "kafka.sasl.username is required for PLAIN and SCRAM" $k.sasl.username | quote }}
    {{- $_ := required "kafka.sasl.passwordSecret.name: the Secret holding the SASL password" $k.sasl.passwordSecret.name }}
    password: ${env:KAFKA_SASL_PASSWORD}
    {{- else if eq $m "AWS_MSK_IAM_OAUTHBEARER" }}
    aws_msk:
      region: {{ required "kafka.sasl.awsRegion is required for AWS_MSK_IAM_OAUTHBEARER" $k.sasl.awsRegion | quote }}
    {{- else if eq $m "OAUTHBEARER" }}
    {{- $o := $k.sasl.oauthbearer }}
    oauthbearer:
      token_url: {{ required "kafka.sasl.oauthbearer.tokenURL is required for OAUTHBEARER" $o.tokenURL | quote }}
      client_id: {{ required "kafka.sasl.oauthbearer.clientID is required for OAUTHBEARER" $o.clientID | quote }}
      {{- $_ := required "kafka.sasl.oauthbearer.clientSecretSecret.name: the Secret holding the client secret" $o.clientSecretSecret.name }}
      client_secret: ${env:KAFKA_OAUTH_CLIENT_SECRET}
      {{- with $o.scopes }}
      scopes: {{ toJson . }}
      {{- end }}
      {{- with $o.extensions }}
      extensions: {{ toJson . }}
      {{- end }}
    {{- else }}
    {{- fail (printf "kafka.sasl.mechanism: %q is not one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, AWS_MSK_IAM_OAUTHBEARER, OAUTHBEARER (Kerberos: set receiver.auth yourself)" $m) }}
    {{- end }}
{{- end }}
{{- end -}}

{{- define "kafkatimelag.collectorConfig" -}}
{{- include "kafkatimelag.checkReceiver" . -}}
{{- $receiver := include "kafkatimelag.receiverConfig" . | fromYaml -}}
{{- $receiver = mergeOverwrite $receiver (deepCopy .Values.receiver) -}}
{{- include "kafkatimelag.checkMergedReceiver" $receiver -}}
{{- $pull := eq (include "kafkatimelag.pull" .) "true" -}}
receivers:
  kafka_time_lag:
    {{- toYaml $receiver | nindent 4 }}
processors:
  # Refuses data when the collector nears its memory limit; synchronous, so
  # the exporter's result still reaches the receiver. No batch: the receiver
  # sends large scrapes in chunks itself. Shares of the memory limit, twice
  # the sizing model's figure: the soft limit (85 - 20 = 65 %) is 1.3 x the
  # model, and GOMEMLIMIT (80 %) lies below the hard one.
  memory_limiter:
    check_interval: 1s
    limit_percentage: 85
    spike_limit_percentage: 20
exporters:
{{- if $pull }}
  prometheus:
    endpoint: 0.0.0.0:{{ .Values.export.prometheus.metricsPort }}
    resource_constant_labels:
      included: [kafka.cluster.alias]
    without_scope_info: true
{{- else }}
  otlp_http:
    endpoint: {{ required "export.otlp.endpoint: export.mode=otlp pushes the lag metrics there and has no default: set a collector's OTLP/HTTP endpoint or Prometheus 3's (http://prometheus-operated.<namespace>:9090/api/v1/otlp), or use export.mode=prometheus (the default), which the PodMonitor or ServiceMonitor scrapes" .Values.export.otlp.endpoint | quote }}
    compression: {{ .Values.export.otlp.compression }}
    {{- with .Values.export.otlp.headers }}
    headers: {{ toJson . }}
    {{- end }}
    sending_queue:
      # One chunk in memory at a time, and refused chunks counted by the
      # receiver: the measured memory bound.
      wait_for_result: true
{{- end }}
extensions:
  # Readiness: unhealthy once every scrape has failed for a minute, or at
  # once when the brokers refused the credentials at start.
  healthcheckv2:
    use_v2: true
    component_health:
      include_recoverable_errors: true
      recovery_duration: 1m
      include_permanent_errors: true
    http:
      endpoint: 0.0.0.0:13133
      status:
        enabled: true
        path: /
service:
  extensions: [healthcheckv2]
  pipelines:
    metrics:
      receivers: [kafka_time_lag]
      processors: [memory_limiter]
      exporters: [{{ ternary "prometheus" "otlp_http" $pull }}]
  telemetry:
    metrics:
      level: normal
      readers:
        - pull:
            exporter:
              prometheus:
                host: 0.0.0.0
                port: 8888
{{- end -}}
