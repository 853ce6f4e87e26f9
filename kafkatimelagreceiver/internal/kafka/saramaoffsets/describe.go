package saramaoffsets

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/IBM/sarama"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/brokerwatch"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/saramaconn"
)

// DescribeGroups sends DescribeGroups requests of at most
// maxGroupsPerDescribe groups to each coordinator, one after the other. A
// KIP-848 group is invisible to DescribeGroups (Kafka answers Dead,
// or GROUP_ID_NOT_FOUND); the coordinator's groups that look like one are
// then described again with one ConsumerGroupDescribe, which needs
// protocol_version 3.7.0 or later. Without it they are reported in state
// Unknown rather than as Dead groups with no members.
func (c *Offsets) DescribeGroups(ctx context.Context, groups []string) (map[string]kafka.GroupDescription, error) {
	call, stop := c.conn.Begin(ctx)
	defer stop()
	out := make(map[string]kafka.GroupDescription, len(groups))
	if len(groups) == 0 {
		return out, nil
	}
	client, err := c.conn.Connected(ctx)
	if err != nil {
		return out, err
	}
	byCoordinator, coordinatorErr := c.groupsByCoordinator(ctx, call, client, groups)
	var mu sync.Mutex
	err = saramaconn.PerBroker(ctx, c.conn, call, byCoordinator, func(b *sarama.Broker, groups []string) error {
		var errs []error
		for start := 0; start < len(groups); start += maxGroupsPerDescribe {
			if ctx.Err() != nil {
				errs = append(errs, fmt.Errorf("describe groups on coordinator %d: %d of %d groups not asked: %w", b.ID(), len(groups)-start, len(groups), ctx.Err()))
				break
			}
			described, err := c.describeOn(ctx, call, client, b, groups[start:min(start+maxGroupsPerDescribe, len(groups))])
			mu.Lock()
			for g, d := range described {
				out[g] = d
			}
			mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			}
		}
		return kafka.Join(errs...)
	})
	return out, kafka.Join(coordinatorErr, err, c.nameAssignedTopics(ctx, call, client, out))
}

// maxGroupsPerDescribe bounds the groups of one DescribeGroups request, for
// the same reason as maxGroupsPerOffsetFetch: its response carries every
// member of every group with its assignment, and one response over sarama's
// MaxResponseSize fails all of them, scrape after scrape.
const maxGroupsPerDescribe = 100

func (c *Offsets) describeGroupsVersion() int16 {
	v := c.conn.Config().Version
	switch {
	case v.IsAtLeast(sarama.V2_4_0_0):
		return 5 // v4 added group.instance.id
	case v.IsAtLeast(sarama.V2_3_0_0):
		return 3
	case v.IsAtLeast(sarama.V2_0_0_0):
		return 2
	case v.IsAtLeast(sarama.V0_11_0_0):
		return 1
	default:
		return 0
	}
}

// unknownGroup is a group that could not be described: its members are
// unknown, not absent.
var unknownGroup = kafka.GroupDescription{State: kafka.GroupStateUnknown, Epoch: -1}

func (c *Offsets) describeOn(ctx context.Context, call *brokerwatch.Call, client sarama.Client, b *sarama.Broker, groups []string) (map[string]kafka.GroupDescription, error) {
	resp, err := b.DescribeGroups(&sarama.DescribeGroupsRequest{Version: c.describeGroupsVersion(), Groups: groups})
	c.conn.Observe(ctx, b, "DescribeGroups", err)
	if err != nil {
		return nil, fmt.Errorf("describe %d groups on coordinator %d: %w", len(groups), b.ID(), err)
	}
	out := make(map[string]kafka.GroupDescription, len(groups))
	var (
		errs     []error
		nextGen  []string
		answered = make(map[string]bool, len(resp.Groups))
	)
	for _, gd := range resp.Groups {
		if gd == nil {
			continue
		}
		answered[gd.GroupId] = true
		if errors.Is(gd.Err, sarama.ErrGroupIDNotFound) {
			nextGen = append(nextGen, gd.GroupId)
			out[gd.GroupId] = kafka.GroupDescription{State: kafka.GroupStateDead, Epoch: -1}
			continue
		}
		if !errors.Is(gd.Err, sarama.ErrNoError) {
			c.refreshCoordinatorOn(ctx, call, client, gd.GroupId, gd.Err)
			errs = append(errs, saramaconn.GroupError(gd.GroupId, fmt.Errorf("describe group %q on coordinator %d: %w",
				gd.GroupId, b.ID(), saramaconn.Authorization(gd.Err))))
			continue
		}
		d, err := classicDescription(gd)
		if err != nil {
			errs = append(errs, saramaconn.GroupError(gd.GroupId, fmt.Errorf("describe group %q on coordinator %d: %w", gd.GroupId, b.ID(), err)))
		}
		out[gd.GroupId] = d
		// No classic group is Stable or rebalancing without members.
		if d.State == kafka.GroupStateDead || (len(d.Members) == 0 && d.State != kafka.GroupStateEmpty) {
			nextGen = append(nextGen, gd.GroupId)
		}
	}
	for _, g := range groups {
		if !answered[g] {
			errs = append(errs, saramaconn.GroupError(g, fmt.Errorf("describe group %q on coordinator %d: no answer", g, b.ID())))
		}
	}
	if len(nextGen) > 0 {
		errs = append(errs, c.describeNextGen(ctx, call, b, nextGen, out))
	}
	return out, kafka.Join(errs...)
}

// describeNextGen describes groups with ConsumerGroupDescribe (KIP-848) and
// replaces the classic descriptions of those that are KIP-848 groups.
func (c *Offsets) describeNextGen(ctx context.Context, call *brokerwatch.Call, b *sarama.Broker, groups []string, out map[string]kafka.GroupDescription) error {
	if !c.conn.Config().Version.IsAtLeast(sarama.V3_7_0_0) {
		// The broker may hold KIP-848 groups we are not allowed to ask about.
		for _, g := range groups {
			out[g] = unknownGroup
		}
		return nil
	}
	if err := ctx.Err(); err != nil {
		for _, g := range groups {
			out[g] = unknownGroup
		}
		return fmt.Errorf("describe %d KIP-848 groups on coordinator %d: %w", len(groups), b.ID(), err)
	}
	req := sarama.NewConsumerGroupDescribeRequest(c.conn.Config().Version)
	req.GroupIDs = groups
	resp, err := b.ConsumerGroupDescribe(req)
	if errors.Is(err, sarama.ErrUnsupportedVersion) {
		// Refused before sending: a broker without the API has no KIP-848
		// groups, so the classic answers stand.
		return nil
	}
	c.conn.Observe(ctx, b, "ConsumerGroupDescribe", err)
	if err != nil {
		for _, g := range groups {
			out[g] = unknownGroup
		}
		return fmt.Errorf("describe %d KIP-848 groups on coordinator %d: %w", len(groups), b.ID(), err)
	}
	var errs []error
	for _, gd := range resp.Groups {
		switch {
		case errors.Is(gd.ErrorCode, sarama.ErrGroupIDNotFound):
			// Not a KIP-848 group: the classic answer stands.
		case !errors.Is(gd.ErrorCode, sarama.ErrNoError):
			msg := ""
			if gd.ErrorMessage != nil {
				msg = ": " + *gd.ErrorMessage
			}
			out[gd.GroupID] = unknownGroup
			errs = append(errs, saramaconn.GroupError(gd.GroupID, fmt.Errorf("describe KIP-848 group %q on coordinator %d: %w%s",
				gd.GroupID, b.ID(), saramaconn.Authorization(gd.ErrorCode), msg)))
		default:
			out[gd.GroupID] = nextGenDescription(gd)
		}
	}
	return kafka.Join(errs...)
}

func classicDescription(gd *sarama.GroupDescription) (kafka.GroupDescription, error) {
	d := kafka.GroupDescription{State: kafka.ParseGroupState(gd.State), Protocol: gd.Protocol, Epoch: -1}
	// Member assignments are only filled in while Stable, and only the
	// consumer protocol's are in a format we can read.
	readAssignment := d.State == kafka.GroupStateStable && gd.ProtocolType == "consumer"
	var errs []error
	for _, m := range gd.Members {
		if m == nil {
			continue
		}
		member := kafka.GroupMember{
			MemberID: m.MemberId,
			ClientID: m.ClientId,
			Host:     clientHost(m.ClientHost),
		}
		if m.GroupInstanceId != nil {
			member.InstanceID = *m.GroupInstanceId
		}
		if readAssignment {
			assignment, err := m.GetMemberAssignment()
			if err != nil {
				errs = append(errs, fmt.Errorf("decode assignment of member %q: %w", m.MemberId, err))
			} else {
				member.AssignmentKnown = true
				if assignment != nil {
					for topic, partitions := range assignment.Topics {
						for _, p := range partitions {
							member.Assignment = append(member.Assignment, kafka.TopicPartition{Topic: topic, Partition: p})
						}
					}
					kafka.SortPartitions(member.Assignment)
				}
			}
		}
		d.Members = append(d.Members, member)
	}
	sortMembers(d.Members)
	return d, errors.Join(errs...)
}

func nextGenDescription(gd sarama.ConsumerGroupDescription) kafka.GroupDescription {
	d := kafka.GroupDescription{State: kafka.ParseGroupState(gd.GroupState), Protocol: kafka.NextGenProtocol, Epoch: gd.GroupEpoch}
	for _, m := range gd.Members {
		member := kafka.GroupMember{
			MemberID:        m.MemberID,
			ClientID:        m.ClientID,
			Host:            clientHost(m.ClientHost),
			AssignmentKnown: true,
		}
		if m.InstanceID != nil {
			member.InstanceID = *m.InstanceID
		}
		for _, t := range m.Assignment.TopicPartitions {
			topic := t.TopicName
			if topic == "" {
				topic = t.TopicID.String() // some brokers name topics by id only
			}
			for _, p := range t.Partitions {
				member.Assignment = append(member.Assignment, kafka.TopicPartition{Topic: topic, Partition: p})
			}
		}
		kafka.SortPartitions(member.Assignment)
		d.Members = append(d.Members, member)
	}
	sortMembers(d.Members)
	return d
}

// clientHost drops the slash Java's InetAddress.toString puts before a
// bare address ("/10.0.0.1"), keeping "name/10.0.0.1" whole.
func clientHost(h string) string {
	return strings.TrimPrefix(h, "/")
}

func sortMembers(ms []kafka.GroupMember) {
	sort.Slice(ms, func(i, j int) bool { return ms[i].MemberID < ms[j].MemberID })
}
