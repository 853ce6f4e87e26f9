package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"time"
)

// scrapeErrorLine is what the collector logs when a scrape returns an
// error (scraperhelper), partial or whole.
const scrapeErrorLine = "Error scraping metrics"

// steadyScrapeErrors fails a run whose collector logged a scrape error
// between from and to (the steady scrapes): figures of scrapes that did
// not do their work measure something else. The log's lines start with
// their time (the collector's console encoder, ISO 8601).
func steadyScrapeErrors(logPath string, from, to time.Time) error {
	f, err := os.Open(logPath)
	if err != nil {
		return err
	}
	defer f.Close()
	n, first := 0, ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, scrapeErrorLine) {
			continue
		}
		stamp, _, _ := strings.Cut(line, "\t")
		at, err := time.Parse("2006-01-02T15:04:05.000Z0700", stamp)
		if err != nil || at.Before(from) || at.After(to) {
			continue
		}
		if n++; n == 1 {
			first = line
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", logPath, err)
	}
	if n > 0 {
		return fmt.Errorf("%d steady scrapes logged an error (%s); the first: %.2000s", n, logPath, first)
	}
	return nil
}
