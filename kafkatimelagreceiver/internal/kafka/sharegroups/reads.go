package sharegroups

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// shareType is the group type ListGroups v5 filters share groups by.
const shareType = "share"

// ShareGroups lists the share groups: one ListGroups per broker.
func (c *Client) ShareGroups(ctx context.Context) ([]string, error) {
	ctx, cancel := c.withDeadline(ctx)
	defer cancel()
	if err := c.support(ctx); err != nil {
		return nil, err
	}
	req := kmsg.NewPtrListGroupsRequest()
	req.TypesFilter = []string{shareType}
	var (
		groups []string
		errs   []error
	)
	for _, shard := range c.cl.RequestSharded(ctx, req) {
		c.observe(ctx, kmsg.ListGroups, shard.Err)
		if shard.Err != nil {
			errs = append(errs, c.shardError(kmsg.ListGroups, shard))
			continue
		}
		resp := shard.Resp.(*kmsg.ListGroupsResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			errs = append(errs, fmt.Errorf("ListGroups to broker %d: %w", shard.Meta.NodeID, authorization(err)))
		}
		for _, g := range resp.Groups {
			// A broker that filters by type says the type; one that does
			// not would list every group.
			if g.GroupType == shareType {
				groups = append(groups, g.Group)
			}
		}
	}
	sort.Strings(groups)
	return slices.Compact(groups), kafka.Join(errs...)
}

// DescribeShareGroups describes the groups: one ShareGroupDescribe per
// coordinator.
func (c *Client) DescribeShareGroups(ctx context.Context, groups []string) (map[string]kafka.ShareGroupDescription, error) {
	if len(groups) == 0 {
		return map[string]kafka.ShareGroupDescription{}, nil
	}
	ctx, cancel := c.withDeadline(ctx)
	defer cancel()
	if err := c.support(ctx); err != nil {
		return nil, err
	}
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.GroupIDs = slices.Clone(groups)
	out := make(map[string]kafka.ShareGroupDescription, len(groups))
	var errs []error
	for _, shard := range c.cl.RequestSharded(ctx, req) {
		c.observe(ctx, kmsg.ShareGroupDescribe, shard.Err)
		if shard.Err != nil {
			err := c.shardError(kmsg.ShareGroupDescribe, shard)
			for _, g := range shard.Req.(*kmsg.ShareGroupDescribeRequest).GroupIDs {
				errs = append(errs, &kafka.GroupError{Group: g, Err: err})
			}
			continue
		}
		for _, g := range shard.Resp.(*kmsg.ShareGroupDescribeResponse).Groups {
			err := kerr.ErrorForCode(g.ErrorCode)
			switch {
			case errors.Is(err, kerr.GroupIDNotFound):
				// Deleted, or expired since it was listed.
				out[g.GroupID] = kafka.ShareGroupDescription{State: kafka.GroupStateDead, Epoch: -1}
			case err != nil:
				errs = append(errs, &kafka.GroupError{Group: g.GroupID,
					Err: fmt.Errorf("describe share group %q: %w", g.GroupID, authorization(errMessage(err, g.ErrorMessage)))})
			default:
				out[g.GroupID] = describe(g)
			}
		}
	}
	return out, kafka.Join(errs...)
}

func describe(g kmsg.ShareGroupDescribeResponseGroup) kafka.ShareGroupDescription {
	d := kafka.ShareGroupDescription{State: kafka.ParseGroupState(g.GroupState), Epoch: g.GroupEpoch}
	for _, m := range g.Members {
		member := kafka.ShareGroupMember{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost}
		if m.RackID != nil {
			member.RackID = *m.RackID
		}
		for _, t := range m.Assignment.TopicPartitions {
			for _, p := range t.Partitions {
				member.Assignment = append(member.Assignment, kafka.TopicPartition{Topic: t.Topic, Partition: p})
			}
		}
		kafka.SortPartitions(member.Assignment)
		d.Members = append(d.Members, member)
	}
	slices.SortFunc(d.Members, func(a, b kafka.ShareGroupMember) int { return strings.Compare(a.MemberID, b.MemberID) })
	return d
}

// ShareGroupOffsets reads the groups' start offsets and lag: one
// DescribeShareGroupOffsets per coordinator, for all its groups and every
// partition they have state for.
func (c *Client) ShareGroupOffsets(ctx context.Context, groups []string) (map[string]kafka.ShareGroupOffsets, error) {
	if len(groups) == 0 {
		return map[string]kafka.ShareGroupOffsets{}, nil
	}
	ctx, cancel := c.withDeadline(ctx)
	defer cancel()
	if err := c.support(ctx); err != nil {
		return nil, err
	}
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	for _, g := range groups {
		rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		rg.GroupID = g // no topics: every partition the group has state for
		req.Groups = append(req.Groups, rg)
	}
	sent := c.now()
	shards := c.cl.RequestSharded(ctx, req)
	received := c.now()
	out := make(map[string]kafka.ShareGroupOffsets, len(groups))
	var errs []error
	for _, shard := range shards {
		c.observe(ctx, kmsg.DescribeShareGroupOffsets, shard.Err)
		if shard.Err != nil {
			err := c.shardError(kmsg.DescribeShareGroupOffsets, shard)
			for _, g := range shard.Req.(*kmsg.DescribeShareGroupOffsetsRequest).Groups {
				errs = append(errs, &kafka.GroupError{Group: g.GroupID, Err: err})
			}
			continue
		}
		for _, g := range shard.Resp.(*kmsg.DescribeShareGroupOffsetsResponse).Groups {
			if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
				errs = append(errs, &kafka.GroupError{Group: g.GroupID,
					Err: fmt.Errorf("share group offsets of %q: %w", g.GroupID, authorization(errMessage(err, g.ErrorMessage)))})
				continue
			}
			offsets, partitionErrs := shareOffsets(g)
			errs = append(errs, partitionErrs...)
			offsets.Sent, offsets.Received = sent, received
			out[g.GroupID] = offsets
		}
	}
	return out, kafka.Join(errs...)
}

func shareOffsets(g kmsg.DescribeShareGroupOffsetsResponseGroup) (kafka.ShareGroupOffsets, []error) {
	var (
		out  kafka.ShareGroupOffsets
		errs []error
	)
	for _, t := range g.Topics {
		for _, p := range t.Partitions {
			tp := kafka.TopicPartition{Topic: t.Topic, Partition: p.Partition}
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				errs = append(errs, &kafka.PartitionError{Group: g.GroupID, TopicPartition: tp, Err: &kafka.TopicError{Topic: t.Topic, Operation: kafka.OperationDescribe,
					Err: fmt.Errorf("share group %q on %s/%d: %w", g.GroupID, t.Topic, p.Partition, authorization(errMessage(err, p.ErrorMessage)))}})
				continue
			}
			if p.StartOffset < 0 {
				continue // no state yet: nothing delivered to the group
			}
			out.Partitions = append(out.Partitions, kafka.ShareOffset{
				TopicPartition: tp, StartOffset: p.StartOffset, LeaderEpoch: p.LeaderEpoch, Lag: max(p.Lag, -1), TopicID: t.TopicID,
			})
		}
	}
	slices.SortFunc(out.Partitions, func(a, b kafka.ShareOffset) int { return a.TopicPartition.Compare(b.TopicPartition) })
	return out, errs
}

// shardError is why a request of a call was not answered: a broker that
// did not answer, or a coordinator that could not be found (an ACL refusal
// among them, which stays one).
func (c *Client) shardError(api kmsg.Key, shard kgo.ResponseShard) error {
	if shard.Meta.NodeID < 0 {
		return authorization(fmt.Errorf("%s: no broker to send it to: %w", api.Name(), shard.Err))
	}
	return authorization(c.transportError(fmt.Sprintf("%s to broker %d", api.Name(), shard.Meta.NodeID), shard.Err))
}

// authorization wraps an ACL refusal in a kafka.AuthorizationError.
func authorization(err error) error {
	if errors.Is(err, kerr.GroupAuthorizationFailed) || errors.Is(err, kerr.TopicAuthorizationFailed) ||
		errors.Is(err, kerr.ClusterAuthorizationFailed) {
		return &kafka.AuthorizationError{Err: err}
	}
	return err
}

// errMessage adds the broker's message to its error code, when it gave one.
func errMessage(err error, message *string) error {
	if message == nil || *message == "" {
		return err
	}
	return fmt.Errorf("%w (%s)", err, *message)
}
