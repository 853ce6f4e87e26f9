//go:build kafka

package apachekafka

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestCombinedNode starts one node, creates a topic with a config below the
// segment.bytes floor (internal.segment.bytes), and runs a tool on it.
func TestCombinedNode(t *testing.T) {
	c := New(t, Options{})
	ctx := context.Background()
	require.NoError(t, c.CreateTopic(ctx, "small-segments", 2, map[string]string{"internal.segment.bytes": "20000"}))
	out, err := c.Tool(ctx, Topics, "--bootstrap-server", c.Addrs()[0], "--describe", "--topic", "small-segments")
	require.NoError(t, err)
	require.Contains(t, out, "internal.segment.bytes=20000")
	require.Contains(t, out, "PartitionCount: 2")
}

// TestBrokersKilledPausedRestarted runs a controller and three brokers,
// kills one and starts it again, pauses one and resumes it.
func TestBrokersKilledPausedRestarted(t *testing.T) {
	c := New(t, Options{Brokers: 3})
	ctx := context.Background()
	require.Len(t, c.Nodes, 3)
	require.NoError(t, c.CreateTopic(ctx, "replicated", 3, nil))

	c.Nodes[1].Kill()
	require.False(t, c.Nodes[1].Running())
	require.NoError(t, c.WaitReady(ctx), "the two brokers left serve metadata naming only themselves")
	require.NoError(t, c.Nodes[1].Start(ctx))

	require.NoError(t, c.Nodes[2].Pause())
	require.True(t, c.Nodes[2].Running())
	require.NoError(t, c.Nodes[2].Resume())

	cl, err := c.Client()
	require.NoError(t, err)
	defer cl.Close()
	md, err := kadm.NewClient(cl).Metadata(ctx, "replicated")
	require.NoError(t, err)
	require.Len(t, md.Brokers, 3)
	for _, p := range md.Topics["replicated"].Partitions {
		require.Len(t, p.Replicas, 3, strings.Join(nil, ""))
	}
}
