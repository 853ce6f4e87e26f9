package main

// With -compare-exporters, scalebench replays on the same cluster the
// Kafka requests two other lag exporters send per scrape with their
// defaults, as their sources show, and counts their bytes as it counts the
// collector's: kminion (redpanda-data/kminion, consumer groups through the
// admin API, per-partition granularity, log dirs and topic info on) and
// klag (themoah/klag). Neither reads a record. The replay is franz-go's,
// not theirs: request versions are franz-go's, and a coordinator found once
// is kept (the Java admin client klag uses asks FindCoordinator for each
// group's offsets, a few dozen bytes each).

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/scaleload"
)

// exporterScrape is what one replayed scrape of an exporter caused.
type exporterScrape struct {
	name     string
	requests requestCounts
	bytes    requestCounts
}

// exporterShapes are the exporters replayed, by client id.
var exporterShapes = []struct {
	name   string
	scrape func(context.Context, *kgo.Client, scaleload.Workload) error
}{
	{"kminion", kminionScrape},
	{"klag", klagScrape},
}

// compareExporters replays each exporter's scrape twice on the cluster and
// returns what the second one (connections open, coordinators known) cost.
func compareExporters(ctx context.Context, k *scaleload.Cluster, w scaleload.Workload) ([]exporterScrape, error) {
	var out []exporterScrape
	for _, shape := range exporterShapes {
		clientID := "scalebench-as-" + shape.name
		cl, err := kgo.NewClient(kgo.SeedBrokers(k.Addrs...), kgo.ClientID(clientID), kgo.DisableClientMetrics())
		if err != nil {
			return nil, err
		}
		err = shape.scrape(ctx, cl, w)
		before := exporterScrape{requests: k.Wire.Requests(clientID), bytes: k.Wire.Bytes(clientID)}
		if err == nil {
			err = shape.scrape(ctx, cl, w)
		}
		cl.Close()
		if err != nil {
			return nil, fmt.Errorf("%s's requests: %w", shape.name, err)
		}
		out = append(out, exporterScrape{
			name:     shape.name,
			requests: k.Wire.Requests(clientID).Since(before.requests),
			bytes:    k.Wire.Bytes(clientID).Since(before.bytes),
		})
	}
	return out, nil
}

// topicLeaders asks a topic's Metadata and returns its partitions by
// leader.
func topicLeaders(ctx context.Context, cl *kgo.Client, topic string) (map[int32][]int32, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	leaders := map[int32][]int32{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			leaders[p.Leader] = append(leaders[p.Leader], p.Partition)
		}
	}
	return leaders, nil
}

// shardedErr is the first error of a sharded request.
func shardedErr(shards []kgo.ResponseShard) error {
	for _, s := range shards {
		if s.Err != nil {
			return s.Err
		}
	}
	return nil
}

func groupsOf(w scaleload.Workload) []string {
	groups := make([]string, w.GroupCount())
	for g := range groups {
		groups[g] = w.Group(g)
	}
	return groups
}

// offsetFetchEach asks each group's committed offsets on its own, as both
// exporters do.
func offsetFetchEach(ctx context.Context, cl *kgo.Client, w scaleload.Workload) error {
	for _, group := range groupsOf(w) {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group = group
		if _, err := req.RequestWith(ctx, cl); err != nil {
			return err
		}
	}
	return nil
}

// listAndDescribeGroups lists the groups on every broker (after a Metadata
// request naming no topic, which tells the brokers: franz-go's and the Java
// admin client's way) and describes them at their coordinators.
func listAndDescribeGroups(ctx context.Context, cl *kgo.Client, w scaleload.Workload) error {
	if err := shardedErr(cl.RequestSharded(ctx, kmsg.NewPtrListGroupsRequest())); err != nil {
		return err
	}
	describe := kmsg.NewPtrDescribeGroupsRequest()
	describe.Groups = groupsOf(w)
	return shardedErr(cl.RequestSharded(ctx, describe))
}

// kminionScrape is one Prometheus scrape of kminion: ApiVersions (the
// cluster version), Metadata of every topic, DescribeLogDirs of every
// broker, ListGroups, DescribeGroups, the start and end offsets of every
// partition, every group's offsets, the topics' configurations.
func kminionScrape(ctx context.Context, cl *kgo.Client, w scaleload.Workload) error {
	if _, err := cl.Request(ctx, kmsg.NewPtrApiVersionsRequest()); err != nil {
		return err
	}
	if _, err := cl.Request(ctx, kmsg.NewPtrMetadataRequest()); err != nil {
		return err
	}
	if err := shardedErr(cl.RequestSharded(ctx, kmsg.NewPtrDescribeLogDirsRequest())); err != nil {
		return err
	}
	if err := listAndDescribeGroups(ctx, cl, w); err != nil {
		return err
	}
	adm := kadm.NewClient(cl)
	if _, err := adm.ListStartOffsets(ctx); err != nil {
		return err
	}
	if _, err := adm.ListEndOffsets(ctx); err != nil {
		return err
	}
	if err := offsetFetchEach(ctx, cl, w); err != nil {
		return err
	}
	configs := kmsg.NewPtrDescribeConfigsRequest()
	for t := range w.Topics {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType = kmsg.ConfigResourceTypeTopic
		r.ResourceName = w.Topic(t)
		configs.Resources = append(configs.Resources, r)
	}
	_, err := cl.Request(ctx, configs)
	return err
}

// klagScrape is one collection of klag: ListGroups, DescribeGroups, every
// group's offsets, and per topic its description and three offset lists
// (the max timestamp's offset, KIP-734; the first record's, timestamp 0;
// the end), each of them after a Metadata request of its own, as the Java
// admin client sends.
func klagScrape(ctx context.Context, cl *kgo.Client, w scaleload.Workload) error {
	if err := listAndDescribeGroups(ctx, cl, w); err != nil {
		return err
	}
	if err := offsetFetchEach(ctx, cl, w); err != nil {
		return err
	}
	for t := range w.Topics {
		topic := w.Topic(t)
		if _, err := topicLeaders(ctx, cl, topic); err != nil {
			return err
		}
		for _, timestamp := range []int64{-3, 0, -1} {
			leaders, err := topicLeaders(ctx, cl, topic)
			if err != nil {
				return err
			}
			for leader, partitions := range leaders {
				req := kmsg.NewPtrListOffsetsRequest()
				rt := kmsg.NewListOffsetsRequestTopic()
				rt.Topic = topic
				for _, p := range partitions {
					rp := kmsg.NewListOffsetsRequestTopicPartition()
					rp.Partition = p
					rp.Timestamp = timestamp
					rt.Partitions = append(rt.Partitions, rp)
				}
				req.Topics = append(req.Topics, rt)
				if _, err := req.RequestWith(ctx, cl.Broker(int(leader))); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
