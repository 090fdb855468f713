package server

import (
	"context"
	"time"
)

// storeTimeout bounds one round of backend reads or writes for an operation: a slow backend
// delays the record, never the operation.
const storeTimeout = 15 * time.Second

// persistStart writes the record of an operation that starts running, points its stacks at
// it, and starts its persister. Failures are logged: the operation runs regardless (it is
// then visible on this replica only until a later write succeeds).
func (r *registry) persistStart(op *Operation) {
	if r.store == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := r.store.put(ctx, op.view(), op.principal); err != nil {
		r.log.Warn("operation record not written", "operation", op.id, "err", err)
	}
	for _, st := range op.stacks {
		if err := r.store.setLatest(ctx, st, op.id); err != nil {
			r.log.Warn("operation record not linked to its stack", "operation", op.id, "stack", st, "err", err)
		}
	}
	op.persistStop, op.persistDone = make(chan struct{}), make(chan struct{})
	go r.persist(op)
}

// persist runs beside a running operation: every Poll it writes the new events and looks for
// a cancel request from another replica; every Heartbeat it rewrites the record.
func (r *registry) persist(op *Operation) {
	defer close(op.persistDone)
	tick := time.NewTicker(r.store.Poll)
	defer tick.Stop()
	beat := time.Now()
	for {
		select {
		case <-op.persistStop:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		r.flushEvents(ctx, op)
		if time.Since(beat) >= r.store.Heartbeat {
			if err := r.store.put(ctx, op.view(), op.principal); err != nil {
				r.log.Warn("operation heartbeat not written", "operation", op.id, "err", err)
			}
			beat = time.Now()
		}
		if !op.cancelWanted() && r.store.cancelRequested(ctx, op.id) && op.requestCancel() == nil {
			r.log.Info("operation cancel requested through another replica", "operation", op.id)
		}
		cancel()
	}
}

// persistEnd stops the persister and writes the last events and the final record, before the
// operation lets go of its stacks: a reader elsewhere that sees it ended sees all its events.
func (r *registry) persistEnd(op *Operation) {
	if r.store == nil || op.persistStop == nil {
		return
	}
	close(op.persistStop)
	<-op.persistDone
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	r.flushEvents(ctx, op)
	if err := r.store.put(ctx, op.view(), op.principal); err != nil {
		r.log.Warn("final operation record not written", "operation", op.id, "err", err)
	}
}

// flushEvents writes the events after the last persisted seq as one chunk, and drops the
// chunks the in-memory buffer dropped. Only the persister (then persistEnd) calls it.
func (r *registry) flushEvents(ctx context.Context, op *Operation) {
	evs, _, _, _ := op.since(op.persisted)
	if len(evs) > 0 {
		if err := r.store.appendEvents(ctx, op.id, evs); err != nil {
			r.log.Warn("operation events not written", "operation", op.id, "err", err)
			return
		}
		op.persisted = evs[len(evs)-1].seq
	}
	op.mu.Lock()
	first := op.firstSeq
	op.mu.Unlock()
	if first > op.persistedFirst {
		if err := r.store.dropChunksBefore(ctx, op.id, first); err == nil {
			op.persistedFirst = first
		}
	}
}

// forgetStored removes a pruned operation's record in the background (pruning runs under the
// registry's lock). A removal lost to a crash is left to the sweep.
func (r *registry) forgetStored(id string) {
	if r.store == nil {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		defer cancel()
		if err := r.store.remove(ctx, id); err != nil {
			r.log.Warn("pruned operation record not removed", "operation", id, "err", err)
		}
	}()
}

// sweepStored removes, every interval until ctx ends, the records that replicas which are
// gone could not prune (see OperationStore.sweep).
func (r *registry) sweepStored(ctx context.Context, interval time.Duration) {
	if r.store == nil {
		return
	}
	for {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		if n, err := r.store.sweep(sctx, r.ret.ttl); err != nil {
			r.log.Warn("operation records sweep", "err", err)
		} else if n > 0 {
			r.log.Info("operation records swept", "removed", n)
		}
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

// remoteOp is an operation another replica runs (or ran), read from its record.
type remoteOp struct {
	s   *OperationStore
	id  string
	rec opRecord
}

func (o *remoteOp) view() OperationView { return o.s.viewOf(&o.rec) }

func (o *remoteOp) owner() string { return o.rec.Principal }

// since re-reads the record, then the events: the owner writes its last events before its
// final record, so once the record says ended, the events read after it are complete. A
// backend that does not answer yields nothing this round; the caller asks again after Poll.
func (o *remoteOp) since(after int64) ([]sseEvent, int64, bool, <-chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	wake := make(chan struct{})
	time.AfterFunc(o.s.Poll, func() { close(wake) })
	if rec, err := o.s.get(ctx, o.id); err == nil && rec != nil {
		o.rec = *rec
	}
	done := o.view().State.terminal()
	evs, missed, err := o.s.events(ctx, o.id, after)
	if err != nil {
		return nil, 0, false, wake
	}
	return evs, missed, done, wake
}

// requestCancel leaves a request the owner picks up within Poll; the record then says
// cancelRequested, and canceled once its engine stopped.
func (o *remoteOp) requestCancel() error {
	if o.view().State.terminal() {
		return ErrOperationEnded
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := o.s.requestCancel(ctx, o.id); err != nil {
		return err
	}
	o.rec.View.CancelRequested = true
	return nil
}
