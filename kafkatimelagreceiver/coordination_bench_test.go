package kafkatimelagreceiver

import (
	"context"
	"testing"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kfaketest"
)

// BenchmarkCoordinatedScrape times one replica's steady scrape when three
// coordinated replicas share the 100k workload (50 groups committed on every
// partition of one 2,000-partition topic), against BenchmarkScrape/100k,
// which is one collector with every group. The replica reads every group's
// commits (to agree on who gauges each partition) and does the rest for its
// share; "pairs" is the pairs it reports.
func BenchmarkCoordinatedScrape(b *testing.B) {
	w := kfaketest.ScrapeWorkloads[2]
	k := newScaleKafka(b)
	k.LoadWorkload(b, w.Workload)
	replicas := make([]*timeLagScraper, 3)
	for i := range replicas {
		cfg := k.config()
		cfg.Coordination.GroupID = "bench-replicas"
		replicas[i], _ = newScaleScraper(b, cfg)
	}
	// Joined: the three together report every group, each a share.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		total, shares := 0, 0
		for _, s := range replicas {
			md, err := s.scrape(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			n := pointsOfCount(md, "kafka.consumer_group.lag")
			total += n
			if n > 0 {
				shares++
			}
		}
		if total == w.Pairs() && shares == len(replicas) {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("the replicas did not split the groups: %d of %d pairs, %d replicas with a share", total, w.Pairs(), shares)
		}
		time.Sleep(time.Second)
	}
	s := replicas[0]
	warmUp(b, k, s)
	md, err := s.scrape(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	pairs := pointsOfCount(md, "kafka.consumer_group.lag")
	points := 0
	b.ReportAllocs()
	b.ResetTimer()
	before, cpu := k.Requests(), kfaketest.CPUTime(b)
	for range b.N {
		md, err := s.scrape(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		points = md.DataPointCount()
	}
	b.StopTimer()
	kfaketest.ReportRequests(b, k.Requests().Since(before))
	kfaketest.ReportCPU(b, kfaketest.CPUTime(b)-cpu)
	b.ReportMetric(float64(pairs), "pairs")
	b.ReportMetric(float64(points), "points/op")
}
