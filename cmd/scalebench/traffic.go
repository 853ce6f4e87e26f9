package main

// The Kafka traffic a run causes, counted on the brokers' side of the
// sockets (kafkacount.Wire, through kfake's ListenFn): what the brokers
// send the collector's connections (each response frame, its 4-byte size
// and body, as written; matched to its request by correlation id), told
// apart from every other client by the client id its requests carry; and
// what the bench's writer produces.

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/scaleload"
)

// collectorClientID is the client id the collector's Kafka clients send:
// the receiver's default, which the generated configuration keeps.
const collectorClientID = "otel-kafkatimelag"

// loaderClientID is franz-go's default client id, the loading client's.
const loaderClientID = "kgo"

// traffic is what the brokers sent the collector, by API key, and what the
// writers produced, so far.
type traffic struct {
	requests requestCounts // the collector's requests
	bytes    requestCounts // the bytes of their responses
	produced int64         // the bytes of the writers' Produce requests
}

func readTraffic(k *scaleload.Cluster) traffic {
	return traffic{
		requests: k.Wire.Requests(collectorClientID),
		bytes:    k.Wire.Bytes(collectorClientID),
		produced: k.Wire.RequestBytes(loaderClientID).Of(kmsg.Produce) + k.Wire.RequestBytes(writerClientID).Of(kmsg.Produce),
	}
}

func (t traffic) since(before traffic) traffic {
	return traffic{requests: t.requests.Since(before.requests), bytes: t.bytes.Since(before.bytes), produced: t.produced - before.produced}
}

func (t traffic) plus(o traffic) traffic {
	for i := range t.requests {
		t.requests[i] += o.requests[i]
		t.bytes[i] += o.bytes[i]
	}
	t.produced += o.produced
	return t
}

func kib(b float64) string {
	s := fmt.Sprintf("%.0f", b/1024)
	// Thousands separated, as the docs write them.
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s + " KiB"
}

// byAPI formats per-interval bytes and requests by API, largest first:
// "Fetch 16,300 KiB in 3, OffsetFetch 1,950 KiB in 3, ...".
func byAPI(t traffic, n int) string {
	type api struct {
		name            string
		bytes, requests float64
	}
	var apis []api
	for key := range t.bytes {
		if t.bytes[key] > 0 || t.requests[key] > 0 {
			apis = append(apis, api{kmsg.NameForKey(int16(key)), float64(t.bytes[key]) / float64(n), float64(t.requests[key]) / float64(n)})
		}
	}
	slices.SortFunc(apis, func(a, b api) int {
		if a.bytes != b.bytes {
			if a.bytes > b.bytes {
				return -1
			}
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	var parts []string
	for _, a := range apis {
		parts = append(parts, fmt.Sprintf("%s %s in %s", a.name, kib(a.bytes), trimFloat(a.requests)))
	}
	return strings.Join(parts, ", ")
}

func trimFloat(v float64) string {
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d", int64(v))
	}
	return fmt.Sprintf("%.1f", v)
}

// printTraffic prints, per workload, what the collector read from the
// brokers in a steady interval, against what the writers produced.
func printTraffic(out io.Writer, o options, results []*result) {
	fmt.Fprintf(out, "\nKafka traffic per collection interval (steady), counted on the brokers' side of the sockets: bytes the brokers sent the collector (client id %s; each response's size on the wire), and bytes the writers produced (Produce requests)", collectorClientID)
	if o.busy.on {
		fmt.Fprintf(out, "; busy writes: %s", o.busy.records.describe(o.busy))
	}
	if o.churn.on {
		fmt.Fprintf(out, "; groups commit every %s, %d-%d records behind the end", o.churn.every, o.churn.behindMin, o.churn.behind)
	}
	fmt.Fprint(out, ":\n\n")
	// Fetch is listed interval by interval: record reads that stop or
	// come back show there, where a mean hides them.
	fmt.Fprintln(out, "| workload | produced | collector read, mean (min-max) | per broker | read / produced | requests | by API (bytes in requests) | Fetch requests, each interval |")
	fmt.Fprintln(out, "|---|---:|---:|---:|---:|---:|---|---|")
	for _, r := range results {
		if len(r.steady) == 0 {
			continue
		}
		var sum traffic
		lo, hi := int64(-1), int64(0)
		var fetches []string
		for _, iv := range r.steady {
			sum = sum.plus(iv.traffic)
			fetches = append(fetches, fmt.Sprint(iv.traffic.requests.Of(kmsg.Fetch)))
			total := iv.traffic.bytes.Total()
			if lo < 0 || total < lo {
				lo = total
			}
			hi = max(hi, total)
		}
		n := float64(len(r.steady))
		read := float64(sum.bytes.Total()) / n
		produced := float64(sum.produced) / n
		ratio := "-"
		if produced > 0 {
			ratio = fmt.Sprintf("%.2f", read/produced)
		}
		fmt.Fprintf(out, "| %s | %s | %s (%s-%s) | %s | %s | %s | %s | %s |\n",
			r.w, kib(produced), kib(read), kib(float64(lo)), kib(float64(hi)), kib(read/float64(r.brokers)), ratio,
			trimFloat(float64(sum.requests.Total())/n), byAPI(sum, len(r.steady)), strings.Join(fetches, " "))
		for _, e := range r.exporters {
			replayed := traffic{requests: e.requests, bytes: e.bytes}
			fmt.Fprintf(out, "| %s, %s's requests of one scrape (replayed) | | %s | %s | | %d | %s | |\n",
				r.w, e.name, kib(float64(e.bytes.Total())), kib(float64(e.bytes.Total())/float64(r.brokers)), e.requests.Total(), byAPI(replayed, 1))
		}
	}
	fmt.Fprintln(out)
}
