package kafka

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// The broker errors, as a client would return them; the package knows them
// only through the typed errors that wrap them.
var (
	errGroupAuthz = errors.New("kafka server: The client is not authorized to access this group")
	errTopicAuthz = errors.New("kafka server: The client is not authorized to access this topic")
	errNotLeader  = errors.New("kafka server: Tried to send a message to a replica that is not the leader for some partition")
)

func denied(err error) error { return &AuthorizationError{Err: err} }

func groupErr(group string, err error) error { return &GroupError{Group: group, Err: err} }

func topicErr(topic, op string, err error) error {
	return &TopicError{Topic: topic, Operation: op, Err: err}
}

func TestDenialsSplit(t *testing.T) {
	other := errors.New("broker 2: connection refused")
	twoWrapped := fmt.Errorf("%w: %w", errors.New("outer"), denied(errGroupAuthz))
	// Built as a literal rather than with Join, which would flatten it: Split
	// must walk nested Errors itself.
	tree := Errors{
		groupErr("team-b", fmt.Errorf("fetch committed offsets of group %q: %w", "team-b", denied(errGroupAuthz))),
		Errors{
			topicErr("secret", OperationDescribe, fmt.Errorf("find leader of secret/0: %w", denied(errTopicAuthz))),
			topicErr("secret", OperationDescribe, fmt.Errorf("find leader of secret/1: %w", denied(errTopicAuthz))),
			other,
		},
		topicErr("audit", OperationRead, fmt.Errorf("fetch record audit/0@3: %w", denied(errTopicAuthz))),
		topicErr("orders", OperationDescribe, fmt.Errorf("list offsets of orders/0: %w", errNotLeader)),
		fmt.Errorf("cluster: %w", denied(errTopicAuthz)), // not attributable
		twoWrapped,
	}
	d := NewDenials()
	rest := d.Split(tree)
	require.Error(t, rest)
	require.ErrorIs(t, rest, other)
	require.ErrorIs(t, rest, errNotLeader, "other errors about a resource stay errors")
	require.Contains(t, rest.Error(), "cluster: ", "a denial that names no group or topic stays an error")
	require.Contains(t, rest.Error(), "outer", "an error wrapping two errors is a leaf and keeps its message")
	require.NotContains(t, rest.Error(), "secret/", "named denials are taken out")
	require.NotContains(t, rest.Error(), "team-b")
	require.NotContains(t, rest.Error(), "audit/")
	require.Equal(t, map[string]struct{}{"team-b": {}}, d.groups)
	require.Equal(t, map[string]map[string]struct{}{"secret": {"Describe": {}}, "audit": {"Read": {}}}, d.topics)

	var items Errors
	require.ErrorAs(t, rest, &items, "what is left is still walkable by item")
	require.Len(t, items, 4)
	require.Same(t, twoWrapped, items[3], "a multi-error that is not Errors is kept whole")

	require.NoError(t, NewDenials().Split(nil))
	only := NewDenials()
	require.NoError(t, only.Split(groupErr("g", denied(errGroupAuthz))), "nothing but denials: no error")
	require.False(t, only.Empty())
}

// An authorization error is recognised by type wherever it sits under the
// GroupError or TopicError, and a GroupError or TopicError without one is a
// fault, whatever its message says.
func TestDenialsSplitByType(t *testing.T) {
	d := NewDenials()
	nested := groupErr("deep", fmt.Errorf("describe group %q on coordinator 1: %w",
		"deep", fmt.Errorf("attempt 2: %w", denied(errGroupAuthz))))
	require.NoError(t, d.Split(nested))
	require.Equal(t, []string{"kept"}, d.Allowed([]string{"deep", "kept"}))

	lookalike := groupErr("g", errors.New("not authorized to access group"))
	require.Same(t, lookalike, NewDenials().Split(lookalike), "the message alone is no denial")

	bare := denied(errTopicAuthz)
	require.Same(t, bare, NewDenials().Split(bare), "a denial about nothing named stays an error")
}

func TestJoin(t *testing.T) {
	require.NoError(t, Join())
	require.NoError(t, Join(nil, nil))
	a, b, c := errors.New("a"), errors.New("b"), errors.New("c")
	require.Same(t, a, Join(a).(Errors)[0])
	joined := Join(a, nil, Join(b, c))
	require.Equal(t, Errors{a, b, c}, joined, "nested Errors are flattened")
	require.Equal(t, "a\nb\nc", joined.Error())
	require.ErrorIs(t, joined, c)
}

// TestErrorOfThousandsOfFailedGroupsIsBounded: a coordinator that fails
// every one of its 5,000 groups makes an error of 5,000 items. Its message,
// which ends up in the scrape's error and the collector's log every scrape,
// names the first ones and counts the rest; every item is still reachable
// by errors.Is and errors.As.
func TestErrorOfThousandsOfFailedGroupsIsBounded(t *testing.T) {
	timeout := errors.New("i/o timeout")
	var errs []error
	for i := range 5000 {
		group := fmt.Sprintf("group-%04d", i)
		errs = append(errs, groupErr(group, fmt.Errorf("fetch committed offsets of group %q from coordinator 1: %w", group, timeout)))
	}
	joined := Join(errs...)
	msg := joined.Error()
	require.Less(t, len(msg), 4096, "the message stays bounded: %d bytes", len(msg))
	require.Contains(t, msg, `group "group-0000"`)
	require.NotContains(t, msg, `group "group-4999"`)
	require.Contains(t, msg, fmt.Sprintf("... and %d more errors", 5000-maxErrorsInMessage))
	var groupError *GroupError
	require.ErrorAs(t, Join(joined, errors.New("other")), &groupError)
	require.ErrorIs(t, joined, timeout)
	require.Len(t, joined.(Errors), 5000, "nothing is dropped, only left out of the message")

	few := Join(errors.New("a"), errors.New("b"))
	require.Equal(t, "a\nb", few.Error(), "a short list is written whole")
}

func TestDenialsWarnsOnceAndBounded(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	d := NewDenials()
	d.Warn(zap.New(core), "scrape")
	require.Zero(t, logs.Len(), "nothing denied: nothing logged")

	for i := range 50 {
		require.NoError(t, d.Split(groupErr(fmt.Sprintf("group-%02d", i), denied(errGroupAuthz))))
	}
	require.NoError(t, d.Split(topicErr("audit", OperationRead, denied(errTopicAuthz))))
	require.NoError(t, d.Split(topicErr("audit", OperationDescribe, denied(errTopicAuthz))))
	d.Warn(zap.New(core), "scrape")
	require.Equal(t, 1, logs.Len())
	entry := logs.All()[0]
	require.Equal(t, zap.WarnLevel, entry.Level)
	fields := entry.ContextMap()
	require.EqualValues(t, 50, fields["groups_denied"])
	require.Len(t, fields["groups"], maxNamesLogged+1)
	require.Equal(t, "... and 30 more", fields["groups"].([]any)[maxNamesLogged])
	require.Equal(t, []any{"audit (Describe, Read)"}, fields["topics"])
}

// A denial joined with another fault in one multi-error that is not Errors
// cannot be taken apart: it stays an error, so the other fault is not hidden.
func TestDenialJoinedWithAFaultStaysAnError(t *testing.T) {
	fault := errors.New("broker 1: i/o timeout")
	mixed := groupErr("team-a", errors.Join(denied(errGroupAuthz), fault))
	d := NewDenials()
	require.ErrorIs(t, d.Split(mixed), fault)
	require.True(t, d.Empty())
}
