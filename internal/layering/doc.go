// Package layering holds, as tests, the rules of how the code is laid out
// that no compiler checks: which packages may speak Kafka with which
// client, what the share-group client builds without, and that the fast
// test layer (`make test-unit`) needs no Kafka and no waiting. Its tests
// read the packages through `go list` and their files through go/parser;
// a new rule is one more entry in rules_test.go.
package layering
