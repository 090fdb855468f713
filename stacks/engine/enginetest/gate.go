package enginetest

import (
	"context"
	"sync"
)

// Gate holds calls until it opens: a concurrency test starts an operation, sees it begin on
// Entered, does what it tests while the operation runs, then opens the gate.
type Gate struct {
	// Entered receives each held call ("up cluster.main") as it starts to wait. It buffers
	// 100; a test that holds more must drain it.
	Entered chan string

	open chan struct{}
	once sync.Once
}

// NewGate returns a closed gate.
func NewGate() *Gate {
	return &Gate{Entered: make(chan string, 100), open: make(chan struct{})}
}

// Open lets every held call and every later one through. It may be called more than once.
func (g *Gate) Open() { g.once.Do(func() { close(g.open) }) }

// Wait announces call on Entered and waits until the gate opens (nil) or ctx ends (its error).
func (g *Gate) Wait(ctx context.Context, call string) error {
	g.Entered <- call
	select {
	case <-g.open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
