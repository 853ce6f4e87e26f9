//go:build tools

// Package tools pins the developer tools, apart from the main module so that
// their dependencies do not mix with the collector's: mdatagen is built from
// here by `make generate`, helm by `make helm-check`, and actionlint (a
// `tool` line in go.mod) by `make workflow-check`. v0.159.0 is the newest
// mdatagen on the module proxy; its output compiles against collector
// v0.165.0 unchanged.
package tools

import (
	_ "go.opentelemetry.io/collector/cmd/mdatagen"
	_ "helm.sh/helm/v3/cmd/helm"
)
