package kafka

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"go.uber.org/zap"
)

// AuthorizationError is Kafka refusing access to a group or topic: a
// standing ACL decision, not a fault that retrying fixes.
type AuthorizationError struct {
	Err error // the broker's error
}

func (e *AuthorizationError) Error() string { return e.Err.Error() }
func (e *AuthorizationError) Unwrap() error { return e.Err }

// AuthenticationError is the brokers refusing the configured credentials:
// a configuration the receiver cannot work with until it is fixed.
type AuthenticationError struct {
	Err error // the client's error
}

func (e *AuthenticationError) Error() string { return e.Err.Error() }
func (e *AuthenticationError) Unwrap() error { return e.Err }

// GroupError is an error about one consumer group.
type GroupError struct {
	Group string
	Err   error
}

func (e *GroupError) Error() string { return e.Err.Error() }
func (e *GroupError) Unwrap() error { return e.Err }

// ACL operations a TopicError names.
const (
	OperationDescribe = "Describe"
	OperationRead     = "Read"
	// OperationDescribeConfigs is needed to read a topic's retention.
	OperationDescribeConfigs = "DescribeConfigs"
)

// TopicError is an error about one topic or one of its partitions, met
// while doing what needs the ACL operation Operation on it.
type TopicError struct {
	Topic     string
	Operation string
	Err       error
}

func (e *TopicError) Error() string { return e.Err.Error() }
func (e *TopicError) Unwrap() error { return e.Err }

// PartitionError is an error about one group's offset on one partition: the
// group was read, but not its committed offset (or share-partition state)
// there. Err is a TopicError, so that what an ACL denied is told as it is
// for the topic. A value folded over the group's partitions of the topic
// would be over part of them: the reader withholds it (UnreadPartitions).
type PartitionError struct {
	Group string
	TopicPartition
	Err error
}

func (e *PartitionError) Error() string { return e.Err.Error() }
func (e *PartitionError) Unwrap() error { return e.Err }

// UnreadPartitions gathers, by group, the partitions err's PartitionErrors
// name, sorted; nil when it names none.
func UnreadPartitions(err error) map[string][]TopicPartition {
	var out map[string][]TopicPartition
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case nil:
		case *PartitionError:
			if out == nil {
				out = map[string][]TopicPartition{}
			}
			out[e.Group] = append(out[e.Group], e.TopicPartition)
		case interface{ Unwrap() []error }:
			for _, item := range e.Unwrap() {
				walk(item)
			}
		default:
			walk(errors.Unwrap(err))
		}
	}
	walk(err)
	for g, tps := range out {
		SortPartitions(tps)
		out[g] = slices.Compact(tps)
	}
	return out
}

// Errors is the error of a call that failed for several items (groups,
// partitions, brokers). Its message is its first items' messages, one per
// line, and a count of the others.
type Errors []error

// maxErrorsInMessage bounds the items an Errors message writes out: a
// coordinator failing thousands of groups must not put a megabyte into every
// scrape's error and log line. Every item stays reachable by errors.Is and
// errors.As.
const maxErrorsInMessage = maxNamesLogged

func (e Errors) Error() string {
	shown := e[:min(len(e), maxErrorsInMessage)]
	var b strings.Builder
	for i, err := range shown {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(err.Error())
	}
	if more := len(e) - len(shown); more > 0 {
		fmt.Fprintf(&b, "\n... and %d more errors", more)
	}
	return b.String()
}

func (e Errors) Unwrap() []error { return e }

// Join returns the non-nil errors as one Errors (nested Errors are
// flattened), or nil when there are none.
func Join(errs ...error) error {
	var out Errors
	for _, err := range errs {
		var nested Errors
		switch {
		case err == nil:
		case isErrors(err, &nested):
			out = append(out, nested...)
		default:
			out = append(out, err)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Denials gathers the groups and topics that one scrape (or one sample)
// skipped because an ACL denied them, so that they are reported once, as one
// warning, instead of failing the scrape. It is used by one goroutine at a
// time.
type Denials struct {
	groups map[string]struct{}
	topics map[string]map[string]struct{} // topic -> ACL operations denied
}

func NewDenials() *Denials {
	return &Denials{groups: map[string]struct{}{}, topics: map[string]map[string]struct{}{}}
}

// Split removes from err the authorization failures about a named group or
// topic, remembering what they were about, and returns the rest: the errors
// worth failing a scrape for. A denial that names no group or topic stays
// an error, so that nothing is hidden that the warning cannot tell.
func (d *Denials) Split(err error) error {
	if err == nil {
		return nil
	}
	if items, ok := err.(Errors); ok {
		var rest []error
		for _, item := range items {
			rest = append(rest, d.Split(item))
		}
		return Join(rest...)
	}
	var (
		group *GroupError
		topic *TopicError
	)
	if !deniedAlone(err) {
		return err
	}
	switch {
	case errors.As(err, &group):
		d.groups[group.Group] = struct{}{}
	case errors.As(err, &topic):
		ops := d.topics[topic.Topic]
		if ops == nil {
			ops = map[string]struct{}{}
			d.topics[topic.Topic] = ops
		}
		ops[topic.Operation] = struct{}{}
	default:
		return err
	}
	return nil
}

// deniedAlone tells whether err is an authorization failure and nothing
// else: an error that joins a denial with other errors (a multi-error other
// than Errors) must stay an error, or the other faults would be hidden.
func deniedAlone(err error) bool {
	for err != nil {
		switch e := err.(type) {
		case *AuthorizationError:
			return true
		case interface{ Unwrap() []error }:
			return false
		default:
			err = errors.Unwrap(e)
		}
	}
	return false
}

// Allowed returns the groups that were not denied.
func (d *Denials) Allowed(groups []string) []string {
	if len(d.groups) == 0 {
		return groups
	}
	out := make([]string, 0, len(groups))
	for _, g := range groups {
		if _, ok := d.groups[g]; !ok {
			out = append(out, g)
		}
	}
	return out
}

// Empty tells whether nothing was denied.
func (d *Denials) Empty() bool {
	return len(d.groups) == 0 && len(d.topics) == 0
}

// maxNamesLogged bounds the names in the warning: a principal denied
// thousands of groups must not write a megabyte per scrape.
const maxNamesLogged = 20

// Warn logs what was skipped, as one warning; nothing when nothing was.
func (d *Denials) Warn(logger *zap.Logger, what string) {
	if d.Empty() {
		return
	}
	groups := sortedNames(d.groups)
	topics := make([]string, 0, len(d.topics))
	for topic, ops := range d.topics {
		topics = append(topics, topic+" ("+strings.Join(sortedNames(ops), ", ")+")")
	}
	sort.Strings(topics)
	logger.Warn(what+": skipped consumer groups and topics this principal is not authorized for; "+
		"grant Describe on them (and Read on topics whose records are read for time lag) or filter them out",
		zap.Int("groups_denied", len(groups)),
		zap.Strings("groups", TruncateNames(groups)),
		zap.Int("topics_denied", len(topics)),
		zap.Strings("topics", TruncateNames(topics)),
	)
}

func sortedNames(set map[string]struct{}) []string {
	out := make([]string, 0, len(set))
	for name := range set {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// TruncateNames returns at most the first maxNamesLogged names, and a count
// of the others, for a log line that must stay bounded.
func TruncateNames(names []string) []string {
	if len(names) <= maxNamesLogged {
		return names
	}
	out := append([]string(nil), names[:maxNamesLogged]...)
	return append(out, fmt.Sprintf("... and %d more", len(names)-maxNamesLogged))
}

func isErrors(err error, out *Errors) bool {
	e, ok := err.(Errors)
	*out = e
	return ok
}
