package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/tfrs-io/tfrs-operator/api/stackname"
)

// Operations in the state backend. The replica that runs an operation is its only writer: it
// writes the record when the operation starts, rewrites it as a heartbeat while it runs and
// once more when it ends, and appends its events in chunks. Any other replica that shares the
// backend reads the record and follows the chunks, so GET, the event stream (with
// Last-Event-ID) and cancel work on whichever replica a load balancer picks. Cancel from
// another replica is a request object the owner polls for. A replica that dies stops the
// heartbeat; readers then report the operation failed with `replica-lost`, and the engine's
// lock recovery cleans up the stack on its next run.
//
//	tfrs/api/operations/<id>/op.json                 the record (opRecord)
//	tfrs/api/operations/<id>/events/<first>-<last>.json  events first..last (zero-padded seqs)
//	tfrs/api/operations/<id>/cancel                  a cancel request
//	tfrs/api/latest/<stack>.json                     the id of the stack's latest operation
//
// Every key is per operation or per stack, so no request lists more than one operation's
// chunks; only the hourly sweep of expired records lists the operations prefix.
const (
	opsPrefix    = apiPrefix + "operations/"
	latestPrefix = apiPrefix + "latest/"
)

// opRecord is an operation as the backend keeps it. View is what GET answers (outputs are
// already redacted, as in every response); Heartbeat is when its owner last wrote it.
type opRecord struct {
	View      OperationView `json:"operation"`
	Principal string        `json:"principal,omitempty"`
	Replica   string        `json:"replica"`
	// Instance tells this process from an earlier one of the same replica (a restarted
	// container keeps its Pod's name).
	Instance  string    `json:"instance"`
	Heartbeat time.Time `json:"heartbeat"`
}

type eventChunk struct {
	Events []chunkEvent `json:"events"`
}

type chunkEvent struct {
	Seq  int64           `json:"seq"`
	Name string          `json:"name"`
	Data json.RawMessage `json:"data"`
}

// OperationStore keeps operation records in the state backend. Create it with
// NewOperationStore.
type OperationStore struct {
	b                 *blob.Bucket
	replica, instance string
	// Heartbeat is how often a running operation's record is rewritten; LostAfter without
	// one makes readers report it lost (a few heartbeats: a GC pause or a slow backend
	// must not look like a dead replica). Poll is how often followers read the backend and
	// owners look for cancel requests and write new events.
	Heartbeat, LostAfter, Poll time.Duration
	now                        func() time.Time
}

// NewOperationStore keeps records in b, written as replica (its pod or host name, shown in
// records and in replica-lost errors).
func NewOperationStore(b *blob.Bucket, replica string) *OperationStore {
	return &OperationStore{b: b, replica: replica, instance: newOperationID(), Heartbeat: 10 * time.Second, LostAfter: 45 * time.Second,
		Poll: time.Second, now: time.Now}
}

// ReplicaName is this process's name in operation records: the Pod's name in a pod (downward
// API), else host and pid.
func ReplicaName() string {
	if p := os.Getenv("POD_NAME"); p != "" {
		return p
	}
	h, _ := os.Hostname()
	return h + "/" + strconv.Itoa(os.Getpid())
}

func opKey(id string) string     { return opsPrefix + id + "/op.json" }
func eventsDir(id string) string { return opsPrefix + id + "/events/" }
func cancelKey(id string) string { return opsPrefix + id + "/cancel" }

func chunkKey(id string, first, last int64) string {
	return fmt.Sprintf("%s%012d-%012d.json", eventsDir(id), first, last)
}

// parseChunkKey reads first and last back from a chunk's key.
func parseChunkKey(id, key string) (first, last int64, ok bool) {
	s, ok := strings.CutSuffix(strings.TrimPrefix(key, eventsDir(id)), ".json")
	if !ok {
		return 0, 0, false
	}
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return 0, 0, false
	}
	first, err1 := strconv.ParseInt(a, 10, 64)
	last, err2 := strconv.ParseInt(b, 10, 64)
	return first, last, err1 == nil && err2 == nil && first <= last
}

func latestKey(stack string) (string, error) {
	if err := stackname.Validate(stack); err != nil {
		return "", err
	}
	return latestPrefix + stack + ".json", nil
}

func (s *OperationStore) writeJSON(ctx context.Context, key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.b.WriteAll(ctx, key, b, &blob.WriterOptions{ContentType: "application/json"})
}

// readJSON reads key into v; found is false for a missing key.
func (s *OperationStore) readJSON(ctx context.Context, key string, v any) (found bool, err error) {
	b, err := s.b.ReadAll(ctx, key)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, json.Unmarshal(b, v)
}

// put writes a record, stamped with this replica and now.
func (s *OperationStore) put(ctx context.Context, v OperationView, principal string) error {
	return s.writeJSON(ctx, opKey(v.ID), opRecord{View: v, Principal: principal, Replica: s.replica, Instance: s.instance, Heartbeat: s.now()})
}

// get reads a record; nil when there is none.
func (s *OperationStore) get(ctx context.Context, id string) (*opRecord, error) {
	var rec opRecord
	found, err := s.readJSON(ctx, opKey(id), &rec)
	if err != nil || !found {
		return nil, err
	}
	return &rec, nil
}

// mine: this process wrote the record.
func (s *OperationStore) mine(rec *opRecord) bool { return rec.Instance == s.instance }

// lost: the record says running, but its owner stopped writing it.
func (s *OperationStore) lost(rec *opRecord) bool {
	return !rec.View.State.terminal() && s.now().Sub(rec.Heartbeat) > s.LostAfter
}

// viewOf is what GET answers for a record: as written, or failed when its replica is lost.
func (s *OperationStore) viewOf(rec *opRecord) OperationView {
	v := rec.View
	if s.lost(rec) {
		p := newProblem(http.StatusServiceUnavailable, "replica-lost", "Replica lost",
			fmt.Sprintf("the replica running this operation (%s) stopped writing it at %s; the next operation on the resource recovers the stack",
				rec.Replica, rec.Heartbeat.UTC().Format(time.RFC3339)))
		p.Instance = v.Links.Self
		v.State, v.EndedAt, v.Error = StateFailed, rec.Heartbeat, &p
	}
	return v
}

// appendEvents writes events (consecutive seqs) as one chunk.
func (s *OperationStore) appendEvents(ctx context.Context, id string, evs []sseEvent) error {
	if len(evs) == 0 {
		return nil
	}
	c := eventChunk{Events: make([]chunkEvent, len(evs))}
	for i, ev := range evs {
		c.Events[i] = chunkEvent{Seq: ev.seq, Name: ev.name, Data: ev.data}
	}
	return s.writeJSON(ctx, chunkKey(id, evs[0].seq, evs[len(evs)-1].seq), c)
}

// chunks lists an operation's chunk keys in seq order (zero-padded keys list in order).
func (s *OperationStore) chunks(ctx context.Context, id string) ([]string, error) {
	var keys []string
	it := s.b.List(&blob.ListOptions{Prefix: eventsDir(id)})
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return keys, nil
		}
		if err != nil {
			return nil, err
		}
		if _, _, ok := parseChunkKey(id, obj.Key); ok {
			keys = append(keys, obj.Key)
		}
	}
}

// dropChunksBefore deletes the chunks that end before seq first: the owner's event buffer
// dropped them, so the backend keeps the same bounds.
func (s *OperationStore) dropChunksBefore(ctx context.Context, id string, first int64) error {
	keys, err := s.chunks(ctx, id)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if _, last, _ := parseChunkKey(id, k); last < first {
			if err := s.b.Delete(ctx, k); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
				return err
			}
		}
	}
	return nil
}

// events returns the stored events after seq `after`, and how many before them are gone.
func (s *OperationStore) events(ctx context.Context, id string, after int64) (evs []sseEvent, missed int64, err error) {
	keys, err := s.chunks(ctx, id)
	if err != nil {
		return nil, 0, err
	}
	for _, k := range keys {
		first, last, _ := parseChunkKey(id, k)
		if last <= after {
			continue
		}
		var c eventChunk
		found, err := s.readJSON(ctx, k, &c)
		if err != nil {
			return nil, 0, err
		}
		if !found {
			continue // dropped meanwhile
		}
		if len(evs) == 0 && first > after+1 {
			missed = first - after - 1
		}
		for _, ev := range c.Events {
			if ev.Seq > after {
				evs = append(evs, sseEvent{seq: ev.Seq, name: ev.Name, data: ev.Data})
			}
		}
	}
	return evs, missed, nil
}

// requestCancel leaves a cancel request for the operation's owner.
func (s *OperationStore) requestCancel(ctx context.Context, id string) error {
	return s.b.WriteAll(ctx, cancelKey(id), []byte(s.replica), nil)
}

// cancelRequested: another replica asked the owner to cancel.
func (s *OperationStore) cancelRequested(ctx context.Context, id string) bool {
	ok, err := s.b.Exists(ctx, cancelKey(id))
	return err == nil && ok
}

// setLatest records id as the stack's latest operation.
func (s *OperationStore) setLatest(ctx context.Context, stack, id string) error {
	key, err := latestKey(stack)
	if err != nil {
		return err
	}
	return s.writeJSON(ctx, key, map[string]string{"id": id})
}

// latest is the record of the stack's latest operation; nil when there is none.
func (s *OperationStore) latest(ctx context.Context, stack string) (*opRecord, error) {
	key, err := latestKey(stack)
	if err != nil {
		return nil, err
	}
	var l struct {
		ID string `json:"id"`
	}
	found, err := s.readJSON(ctx, key, &l)
	if err != nil || !found || !reOperationID.MatchString(l.ID) {
		return nil, err
	}
	return s.get(ctx, l.ID)
}

// remove deletes an operation's objects, the record last (a reader never finds chunks of an
// operation without a record... except for the moment of a crash, which the sweep covers).
func (s *OperationStore) remove(ctx context.Context, id string) error {
	keys, err := s.chunks(ctx, id)
	if err != nil {
		return err
	}
	for _, k := range append(keys, cancelKey(id), opKey(id)) {
		if err := s.b.Delete(ctx, k); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
			return err
		}
	}
	return nil
}

// sweep deletes the records of operations that ended (or were lost) more than ttl ago, and
// the latest pointers to them: what the replicas that wrote them could not prune because they
// are gone. It lists the operations prefix, so it runs rarely (hourly), never per request.
func (s *OperationStore) sweep(ctx context.Context, ttl time.Duration) (int, error) {
	n := 0
	it := s.b.List(&blob.ListOptions{Prefix: opsPrefix, Delimiter: "/"})
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return n, err
		}
		id := strings.TrimSuffix(strings.TrimPrefix(obj.Key, opsPrefix), "/")
		if !obj.IsDir || !reOperationID.MatchString(id) {
			continue
		}
		rec, err := s.get(ctx, id)
		if err != nil {
			return n, err
		}
		// No record: an owner writes it before anything else and remove deletes it last, so
		// what is left is a cancel request that came after the operation was pruned.
		if rec != nil {
			v := s.viewOf(rec)
			if !v.State.terminal() || s.now().Sub(v.EndedAt) <= ttl {
				continue
			}
		}
		if err := s.remove(ctx, id); err != nil {
			return n, err
		}
		n++
	}
	return n, s.sweepLatest(ctx)
}

// sweepLatest drops latest pointers whose operation is gone. A pointer younger than LostAfter
// is left alone: it may be a new operation's, written just after the sweep read the old one.
func (s *OperationStore) sweepLatest(ctx context.Context) error {
	it := s.b.List(&blob.ListOptions{Prefix: latestPrefix})
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		stack, ok := strings.CutSuffix(strings.TrimPrefix(obj.Key, latestPrefix), ".json")
		if !ok || stackname.Validate(stack) != nil || s.now().Sub(obj.ModTime) <= s.LostAfter {
			continue
		}
		rec, err := s.latest(ctx, stack)
		if err != nil {
			return err
		}
		if rec == nil {
			if err := s.b.Delete(ctx, obj.Key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
				return err
			}
		}
	}
}
