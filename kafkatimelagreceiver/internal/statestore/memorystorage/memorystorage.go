// Package memorystorage is a storage extension that keeps its values in
// memory, standing in for file_storage in tests, so that a collector restart
// can be simulated in-process.
package memorystorage

import (
	"context"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
)

// Extension is the storage extension; its clients share its values.
type Extension struct {
	component.StartFunc
	component.ShutdownFunc
	mu     sync.Mutex
	values map[string][]byte
	opened int
	closed int
	// hung, while not nil, holds every Set and Close until it is closed.
	hung chan struct{}
}

// New is an extension holding no values.
func New() *Extension { return &Extension{values: map[string][]byte{}} }

// GetClient opens a client, as a storage extension does for a component.
func (e *Extension) GetClient(context.Context, component.Kind, component.ID, string) (storage.Client, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.opened++
	return &client{e}, nil
}

// Client is a client of e that is not counted as opened.
func (e *Extension) Client() storage.Client { return &client{e} }

// Value is a copy of what key holds (nil when nothing).
func (e *Extension) Value(key string) []byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]byte(nil), e.values[key]...)
}

// Put stores a copy of value under key.
func (e *Extension) Put(key string, value []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.values[key] = append([]byte(nil), value...)
}

// Opened is how many clients GetClient opened.
func (e *Extension) Opened() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.opened
}

// Closed is how many clients were closed.
func (e *Extension) Closed() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.closed
}

// Hang makes Set and Close block, whatever their context says, until
// release is called: a storage whose disk hangs (an NFS mount gone away).
func (e *Extension) Hang() (release func()) {
	hung := make(chan struct{})
	e.mu.Lock()
	e.hung = hung
	e.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			e.mu.Lock()
			e.hung = nil
			e.mu.Unlock()
			close(hung)
		})
	}
}

// waitIfHung blocks while the extension hangs.
func (e *Extension) waitIfHung() {
	e.mu.Lock()
	hung := e.hung
	e.mu.Unlock()
	if hung != nil {
		<-hung
	}
}

type client struct{ e *Extension }

func (c *client) Get(_ context.Context, key string) ([]byte, error) {
	c.e.mu.Lock()
	defer c.e.mu.Unlock()
	if v, ok := c.e.values[key]; ok {
		return append([]byte(nil), v...), nil
	}
	return nil, nil
}

func (c *client) Set(_ context.Context, key string, value []byte) error {
	c.e.waitIfHung()
	c.e.Put(key, value)
	return nil
}

func (c *client) Delete(_ context.Context, key string) error {
	c.e.mu.Lock()
	defer c.e.mu.Unlock()
	delete(c.e.values, key)
	return nil
}

func (c *client) Batch(ctx context.Context, ops ...*storage.Operation) error {
	for _, op := range ops {
		switch op.Type {
		case storage.Get:
			op.Value, _ = c.Get(ctx, op.Key)
		case storage.Set:
			_ = c.Set(ctx, op.Key, op.Value)
		case storage.Delete:
			_ = c.Delete(ctx, op.Key)
		}
	}
	return nil
}

func (c *client) Close(context.Context) error {
	c.e.waitIfHung()
	c.e.mu.Lock()
	defer c.e.mu.Unlock()
	c.e.closed++
	return nil
}

// Host is a component.Host offering the given extensions.
type Host map[component.ID]component.Component

// GetExtensions returns h.
func (h Host) GetExtensions() map[component.ID]component.Component { return h }
