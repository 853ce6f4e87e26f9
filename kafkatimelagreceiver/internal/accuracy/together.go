package accuracy

// runTogether runs every partition of shape at once, at the same instants
// Run's partitions are run at: a method that reads them as one
// (MethodSpec.NewPartitions) is one instance told of every partition's
// samples and scrapes, its per-scrape budgets shared by them; any other is
// a fresh instance a partition, as Run runs it. The points are partition
// after partition, as Run's are.
func runTogether(shape Shape, iv Interval, methods []MethodSpec, seed uint64, out []Series) {
	n := shape.PartitionCount()
	logs, commits := make([]*Timeline, n), make([][]*Commits, n)
	for p := range n {
		logs[p], commits[p] = shape.BuildPartition(seed, p)
	}
	type instance struct {
		together PartitionsMethod
		each     []Method
	}
	ms := make([]instance, len(methods))
	warmest := int64(0)
	for i, spec := range methods {
		if spec.NewPartitions != nil {
			ms[i].together = spec.NewPartitions(iv.Sampling, n)
		} else {
			for range n {
				ms[i].each = append(ms[i].each, spec.New(iv.Sampling))
			}
		}
		out[i].Groups = len(commits[0])
		warmest = max(warmest, spec.Warm)
	}
	start, end := Epoch+shape.History, shape.End()
	from := start - (warmest+iv.Scrape-1)/iv.Scrape*iv.Scrape
	watching := func(i int, at int64) bool { return at >= start-methods[i].Warm }
	points := make([][][]Point, len(methods)) // by method, by partition
	for i := range points {
		points[i] = make([][]Point, n)
	}
	nextSample := from
	for at := from + scrapePhase; at < end; at += iv.Scrape {
		for ; nextSample < at; nextSample += iv.Sampling {
			reads := make([]Read, n)
			for p, log := range logs {
				reads[p] = Read{End: log.EndAt(nextSample), Sent: nextSample, Received: nextSample + Latency, Start: log.StartAt(nextSample)}
			}
			for i, m := range ms {
				switch {
				case !watching(i, nextSample):
				case m.together != nil:
					m.together.SampleAll(reads)
				default:
					for p, each := range m.each {
						each.Sample(reads[p])
					}
				}
			}
		}
		scrapes, groups := make([]Scrape, n), make([][]int, n)
		committed := 0
		for p := range n {
			scrapes[p], groups[p] = scrapeOf(logs[p], commits[p], at)
			committed += len(groups[p])
		}
		if committed == 0 {
			continue
		}
		for i, m := range ms {
			if !watching(i, at) {
				continue
			}
			estimates := make([]Estimate, n)
			if m.together != nil {
				estimates = m.together.ScrapeAll(scrapes)
			} else {
				for p, each := range m.each {
					if len(groups[p]) > 0 {
						estimates[p] = each.Scrape(scrapes[p])
					}
				}
			}
			if at < start {
				continue // warming up: not scored
			}
			for p, e := range estimates {
				for j, g := range groups[p] {
					appended, sent := truthsAt(logs[p], scrapes[p], scrapes[p].Committed[j])
					points[i][p] = append(points[i][p], Point{At: scrapes[p].Received, Partition: p, Group: g, Truth: appended, TruthCreate: sent,
						Estimate: e.Groups[j].TimeLag, Estimated: e.Groups[j].OK})
				}
				out[i].Cost.add(e.Cost)
			}
		}
	}
	for i := range points {
		for _, partition := range points[i] {
			out[i].Points = append(out[i].Points, partition...)
		}
	}
}

// scrapeOf is what a scrape at at is given of a partition's log and its
// groups' commits, and the groups that have committed, as in its
// Committed.
func scrapeOf(log *Timeline, commits []*Commits, at int64) (Scrape, []int) {
	s := Scrape{Read: Read{End: log.EndAt(at), Sent: at, Received: at + Latency, Start: log.StartAt(at)}, Log: log}
	var groups []int
	for g, c := range commits {
		if offset, ok := c.At(at); ok {
			s.Committed = append(s.Committed, offset)
			groups = append(groups, g)
		}
	}
	return s, groups
}
