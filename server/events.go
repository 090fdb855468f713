package server

import (
	"encoding/json"

	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// An operation's event buffer: what the engine and the operation publish, bounded in count
// and bytes, read back after a sequence number. Apart from the SSE handler (sse.go) that
// writes it out, so the buffer's bounds and the count of missed events have one home.

type sseEvent struct {
	seq  int64
	name string
	data []byte
}

// sink receives the engine's progress events. It must not block (the engine's event stream
// waits for it): it only appends to the buffer and wakes subscribers.
func (o *Operation) sink(ev engine.Event) { o.publish("progress", ev) }

func (o *Operation) publish(name string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		return // engine events and state records always encode
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, sseEvent{seq: o.nextSeq, name: name, data: data})
	o.eventBytes += eventSize(data)
	o.nextSeq++
	drop := 0
	for len(o.events)-drop > 1 && (len(o.events)-drop > o.maxEvents || o.eventBytes > o.maxEventBytes) {
		o.eventBytes -= eventSize(o.events[drop].data)
		drop++
	}
	if drop > 0 {
		o.events = o.events[drop:]
		o.firstSeq += int64(drop)
		if cap(o.events) > 2*len(o.events)+64 {
			o.events = append([]sseEvent(nil), o.events...) // let the dropped ones go
		}
	}
	close(o.changed)
	o.changed = make(chan struct{})
}

// eventSize is what an event counts against the byte bounds: its data and a fixed overhead.
func eventSize(data []byte) int64 { return int64(len(data)) + 64 }

// size is the bytes the operation's events hold.
func (o *Operation) size() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.eventBytes
}

// since returns the events after seq `after`, how many were dropped before them, whether the
// operation has ended, and a channel closed on the next change.
func (o *Operation) since(after int64) (evs []sseEvent, missed int64, done bool, changed <-chan struct{}) {
	o.mu.Lock()
	defer o.mu.Unlock()
	start := after + 1 - o.firstSeq
	if start < 0 {
		missed, start = -start, 0
	}
	if start < int64(len(o.events)) {
		evs = append(evs, o.events[start:]...)
	}
	return evs, missed, o.state.terminal(), o.changed
}
