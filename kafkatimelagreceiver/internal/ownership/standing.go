package ownership

import (
	"fmt"
	"sync"
)

// StandDownAfter is how many scrapes in a row a replica may read none of
// its share, or have its points refused by the pipeline, before it gives
// its groups up to the other replicas: one or two failures are a blip that
// a handover (a fresh status window, tables the new owner lacks) would
// cost more than.
const StandDownAfter = 3

// maxRefusedHold bounds how many scrapes a replica that stood down for
// refused exports waits before it takes part again.
const maxRefusedHold = 20

// Standing decides when a replica that holds groups but cannot serve them
// gives them up, and when it takes part again. Reads are judged by the
// scrape, exports by what the pipeline answered; a replica that stood down
// keeps reading the share it gave up (reporting nothing) and rejoins once a
// read succeeds. Exports cannot be tried without a share, so a replica that
// stood down for refused exports rejoins after a hold, StandDownAfter
// scrapes at first and twice as long each time it stands down again before
// an export went through, up to maxRefusedHold. Safe for concurrent use.
type Standing struct {
	mu             sync.Mutex
	unread, refuse int    // consecutive failures while taking part
	share          *Owner // the share given up; nil while taking part
	refused        bool   // it stood down for refused exports
	probes, hold   int    // scrapes since it stood down; how many it waits
}

// Read records whether a scrape while taking part read its share (share
// is what it held). It returns why the replica must stand down now, or nil.
func (s *Standing) Read(share *Owner, ok bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.share != nil {
		return nil
	}
	if ok {
		s.unread = 0
		return nil
	}
	s.unread++
	if s.unread < StandDownAfter {
		return nil
	}
	s.standDown(share, false)
	return fmt.Errorf("stood down: %d scrapes in a row read none of this replica's groups; it rejoins once a read succeeds", StandDownAfter)
}

// Exported records whether the pipeline took the points of a scrape while
// taking part (share is what it held then). It returns why the replica must
// stand down now, or nil.
func (s *Standing) Exported(share *Owner, ok bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.share != nil {
		return nil
	}
	if ok {
		s.refuse, s.hold = 0, 0
		return nil
	}
	s.refuse++
	if s.refuse < StandDownAfter || share == nil {
		return nil
	}
	s.standDown(share, true)
	return fmt.Errorf("stood down: the pipeline refused the points of %d scrapes in a row; it rejoins after %d scrapes", StandDownAfter, s.hold)
}

func (s *Standing) standDown(share *Owner, refused bool) {
	s.share, s.refused, s.probes = share, refused, 0
	s.unread, s.refuse = 0, 0
	if refused {
		s.hold = min(max(2*s.hold, StandDownAfter), maxRefusedHold)
	}
}

// Away returns the share the replica gave up, or nil while it takes part.
func (s *Standing) Away() *Owner {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.share
}

// Probe records whether a scrape while standing down read the share given
// up; true means the replica takes part again now.
func (s *Standing) Probe(ok bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.share == nil {
		return false
	}
	s.probes++
	if !ok || (s.refused && s.probes < s.hold) {
		return false
	}
	s.share = nil
	return true
}
