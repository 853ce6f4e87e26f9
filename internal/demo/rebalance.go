package demo

import (
	"context"
	"fmt"
)

// groupMember is one running member of inventory-rebalancing. Its goroutine
// owns the client; stop cancels it and waits until it has left the group.
type groupMember struct {
	name   string
	cancel context.CancelFunc
	done   chan struct{}
}

func (m *groupMember) stop() {
	m.cancel()
	<-m.done
}

// runInventoryGroup keeps inventory-rebalancing's membership moving: every
// InventoryChurnEvery a member joins or leaves, walking the member count up to
// InventoryMaxMembers and back down to one. Each change is a real join or
// LeaveGroup, so the group rebalances every time.
func (d *Demo) runInventoryGroup(ctx context.Context) {
	var (
		members []*groupMember
		next    int // suffix of the next member's name
		growing = true
	)
	defer func() {
		for _, m := range members {
			m.stop()
		}
	}()

	join := func() {
		next++
		m, err := d.startMember(ctx, fmt.Sprintf("%s-%d", GroupInventory, next))
		if err != nil {
			d.log.Printf("group %s: %v", GroupInventory, err)
			return
		}
		members = append(members, m)
		d.log.Printf("group %s: member %s joining (%d members)", GroupInventory, m.name, len(members))
	}
	leave := func() {
		m := members[0] // the oldest leaves, so names keep rotating
		members = members[1:]
		m.stop()
		d.log.Printf("group %s: member %s left (%d members)", GroupInventory, m.name, len(members))
	}

	for range min(2, d.opts.InventoryMaxMembers) {
		join()
	}
	for sleepCtx(ctx, d.opts.InventoryChurnEvery) {
		switch {
		case len(members) >= d.opts.InventoryMaxMembers:
			growing = false
		case len(members) <= 1:
			growing = true
		}
		if growing || len(members) == 0 {
			join()
		} else {
			leave()
		}
	}
}

func (d *Demo) startMember(ctx context.Context, name string) (*groupMember, error) {
	cl, err := d.groupClient(GroupInventory, name, TopicInventory, false)
	if err != nil {
		return nil, err
	}
	mctx, cancel := context.WithCancel(ctx)
	m := &groupMember{name: name, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		// Close leaves the group (committing what was polled), which is
		// what triggers the rebalance this group exists to show.
		defer cl.Close()
		for {
			fetches := cl.PollFetches(mctx)
			if fetches.IsClientClosed() || mctx.Err() != nil {
				return
			}
			d.logFetchErrors(GroupInventory, fetches)
		}
	}()
	return m, nil
}
