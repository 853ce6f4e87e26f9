package kafkatimelagreceiver

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

func TestShareGroupsNoticeSaysOnce(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	n := &shareGroupsNotice{logger: zap.New(core)}
	old := fmt.Errorf("%w: protocol_version 4.0.0 is older than 4.1.0", kafka.ErrShareGroupsUnsupported)
	for range 3 {
		require.NoError(t, n.filter(old))
	}
	require.Equal(t, 1, logs.Len())
	require.Contains(t, logs.All()[0].ContextMap()["reason"], "protocol_version 4.0.0")

	broken := errors.New("ListGroups to broker 1: EOF")
	require.Equal(t, broken, n.filter(broken), "other errors stay errors")
	require.NoError(t, n.filter(nil))
	require.NoError(t, n.filter(old))
	require.Equal(t, 2, logs.Len(), "said again after share groups were read in between")
}

func TestShareGroupsFromTheClusterSettings(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.Brokers = []string{"127.0.0.1:1"}
	cfg.ProtocolVersion = "4.0.0"
	c, err := newShareGroups(context.Background(), cfg, nil, nil, nil, nil)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.ShareGroups(context.Background())
	require.ErrorIs(t, err, kafka.ErrShareGroupsUnsupported, "the protocol_version of the configuration, without a request")
}
