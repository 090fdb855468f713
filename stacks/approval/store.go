package approval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/tfrs-io/tfrs-operator/api/stackname"
	"github.com/tfrs-io/tfrs-operator/stacks/diff"
	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// The store of pending plan sets. The plans themselves are where the engine keeps them
// (tfrs/plans/<stack>/<id>.json); a Record per object, keyed by the object's own stack, says
// which of them make up its pending set and what a reviewer needs to know. An object has at
// most one pending set: a new proposal replaces the last. Records live in the state backend
// (tfrs/approvals/<stack>.json), so every replica of every door reads the same ones.
//
// Two older formats are read and served as Records: the operator's plan book
// (tfrs/operator/approvals/<stack>.json) and the HTTP API's pending plans
// (tfrs/api/pending-plans/<stack>.json). Nothing writes them any more; a proposal or a
// discard of their stack removes them.

// RecordFormat is the version of the Record encoding.
const RecordFormat = 1

// Record is an object's pending plan set.
type Record struct {
	Format int `json:"format"`
	// ID is the id a person approves (SetID of the plans).
	ID string `json:"id"`
	// Stack is the object's own stack, the record's key.
	Stack string `json:"stack"`
	// Plans are the engine plan ids by stack, the own stack's included; a personal tenant's
	// job type's shared stack has its own, applied with it.
	Plans map[string]string `json:"plans"`
	// Door is the door that proposed the set; only it serves and applies it.
	Door engine.ManagedBy `json:"door"`
	// Reason the set waits.
	Reason Reason `json:"reason,omitempty"`
	// Generation of the spec the plans were taken for (0: none stored yet).
	Generation int64 `json:"generation,omitempty"`
	// Changes counts the planned changes by op; DataLoss lists "<op> <type> <name>" of those
	// that destroy data (Summarize).
	Changes  map[engine.StepOp]int `json:"changes,omitempty"`
	DataLoss []string              `json:"dataLoss,omitempty"`
	Created  time.Time             `json:"created"`

	// What the HTTP API needs to apply the set later, on any replica: the document the plans
	// were taken for with secret values redacted (as its spec store keeps it), whether it had
	// any (the apply then needs the document sent again), and the operation that saved the
	// set ("" for a preview).
	Document  json.RawMessage `json:"document,omitempty"`
	Redacted  bool            `json:"redacted,omitempty"`
	Operation string          `json:"operation,omitempty"`
}

// NewRecord is the record of plans as stack's pending set, waiting for why.
func NewRecord(stack string, plans map[string]*engine.Plan, why Reason, rep *diff.Report, gen int64, now time.Time) *Record {
	r := &Record{Format: RecordFormat, ID: SetID(plans), Stack: stack, Plans: map[string]string{}, Reason: why,
		Generation: gen, Created: now.UTC()}
	for s, p := range plans {
		r.Plans[s] = p.ID
	}
	r.Changes, r.DataLoss = Summarize(rep)
	return r
}

// Plans is what the store needs of the engine: its saved plans.
type Plans interface {
	StorePlan(ctx context.Context, p *engine.Plan) error
	LoadPlan(ctx context.Context, stack, id string) (*engine.Plan, error)
	DiscardPlans(ctx context.Context, stack string, keep ...string) error
}

// Backend is the engine's plans and the state backend's bucket, where the records live
// (*engine.Engine is one).
type Backend interface {
	Plans
	Bucket(ctx context.Context) (*blob.Bucket, error)
}

var _ Backend = (*engine.Engine)(nil)

// OnBucket is a Backend of plans and a bucket the caller holds open.
func OnBucket(bkt *blob.Bucket, plans Plans) Backend { return bucketBackend{plans, bkt} }

type bucketBackend struct {
	Plans
	bkt *blob.Bucket
}

func (b bucketBackend) Bucket(context.Context) (*blob.Bucket, error) { return b.bkt, nil }

// ErrNoPlanStore: the engine keeps no saved plans, so nothing can be gated; a mode that holds
// changes then fails rather than apply unreviewed.
var ErrNoPlanStore = errors.New("this engine cannot save plans; spec.approval.mode must be Auto")

// ErrNoPending: the stack has no pending plan set (of this door).
var ErrNoPending = errors.New("no pending plan")

// Store is one door's view of the pending plan sets.
type Store struct {
	b    Backend
	door engine.ManagedBy
}

// NewStore serves door's pending sets from b; a nil b (an engine without saved plans) fails
// every call with ErrNoPlanStore.
func NewStore(b Backend, door engine.ManagedBy) *Store { return &Store{b: b, door: door} }

const (
	recordPrefix = "tfrs/approvals/"
	// The older formats' homes (see the top of this file).
	operatorPrefix = "tfrs/operator/approvals/"
	apiPrefix      = "tfrs/api/pending-plans/"
)

// legacyPrefix is where door kept its records before this store.
func legacyPrefix(door engine.ManagedBy) string {
	switch door {
	case engine.ManagedByOperator:
		return operatorPrefix
	case engine.ManagedByAPI:
		return apiPrefix
	}
	return ""
}

func (s *Store) bucket(ctx context.Context, stack string) (*blob.Bucket, error) {
	if s == nil || s.b == nil {
		return nil, ErrNoPlanStore
	}
	if err := stackname.Validate(stack); err != nil {
		return nil, err
	}
	bkt, err := s.b.Bucket(ctx)
	if err != nil {
		return nil, fmt.Errorf("plan store: %w", err)
	}
	return bkt, nil
}

// Propose stores plans and rec as rec.Stack's pending set, replacing (and discarding) the set
// before it, and any plan of the own stack no set holds any more. rec.Door becomes the
// store's.
func (s *Store) Propose(ctx context.Context, rec *Record, plans map[string]*engine.Plan) error {
	bkt, err := s.bucket(ctx, rec.Stack)
	if err != nil {
		return err
	}
	if err := s.discard(ctx, bkt, rec.Stack, true); err != nil {
		return err
	}
	if err := s.b.DiscardPlans(ctx, rec.Stack); err != nil {
		return err
	}
	for _, p := range plans {
		if err := s.b.StorePlan(ctx, p); err != nil {
			return err
		}
	}
	rec.Format, rec.Door = RecordFormat, s.door
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := bkt.WriteAll(ctx, recordPrefix+rec.Stack+".json", data, &blob.WriterOptions{ContentType: "application/json"}); err != nil {
		return fmt.Errorf("plan store: %w", err)
	}
	return nil
}

// Pending is stack's pending set; an error matching ErrNoPending when the door has none.
func (s *Store) Pending(ctx context.Context, stack string) (*Record, error) {
	bkt, err := s.bucket(ctx, stack)
	if err != nil {
		return nil, err
	}
	rec, _, err := s.pending(ctx, bkt, stack, false)
	if err == nil && rec == nil {
		err = fmt.Errorf("%w of stack %s", ErrNoPending, stack)
	}
	return rec, err
}

// pending reads stack's record and its key: in the current format, else in the door's older
// one (nil: none). anyDoor takes a current record of another door too (a proposal replaces
// it).
func (s *Store) pending(ctx context.Context, bkt *blob.Bucket, stack string, anyDoor bool) (*Record, string, error) {
	key := recordPrefix + stack + ".json"
	rec, err := readRecord(ctx, bkt, key, decodeRecord)
	if err != nil || (rec != nil && (anyDoor || rec.Door == s.door)) {
		return rec, key, err
	}
	key = legacyPrefix(s.door) + stack + ".json"
	switch legacyPrefix(s.door) {
	case operatorPrefix:
		rec, err = readRecord(ctx, bkt, key, fromOperatorSet(stack))
	case apiPrefix:
		rec, err = readRecord(ctx, bkt, key, fromAPIPlan)
	default:
		return nil, "", nil
	}
	return rec, key, err
}

func readRecord(ctx context.Context, bkt *blob.Bucket, key string, decode func([]byte) (*Record, error)) (*Record, error) {
	data, err := bkt.ReadAll(ctx, key)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("plan store: %w", err)
	}
	rec, err := decode(data)
	if err != nil {
		return nil, fmt.Errorf("plan store: %s: %w", key, err)
	}
	return rec, nil
}

func decodeRecord(data []byte) (*Record, error) {
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, err
	}
	if r.Format != RecordFormat {
		return nil, fmt.Errorf("record format %d, this version reads %d", r.Format, RecordFormat)
	}
	return &r, nil
}

// fromOperatorSet reads the operator's plan book entry: {"id", "plans"}. What status showed
// of it (reason, counts) stays in status.pendingPlan.
func fromOperatorSet(stack string) func([]byte) (*Record, error) {
	return func(data []byte) (*Record, error) {
		var old struct {
			ID    string            `json:"id"`
			Plans map[string]string `json:"plans"`
		}
		if err := json.Unmarshal(data, &old); err != nil {
			return nil, err
		}
		return &Record{Format: RecordFormat, ID: old.ID, Stack: stack, Plans: old.Plans, Door: engine.ManagedByOperator}, nil
	}
}

// fromAPIPlan reads the HTTP API's pending plan, which held every field a Record does but the
// format and the door.
func fromAPIPlan(data []byte) (*Record, error) {
	var old struct {
		ID         string                `json:"id"`
		Stack      string                `json:"stack"`
		Plans      map[string]string     `json:"plans"`
		Reason     string                `json:"reason"`
		Document   json.RawMessage       `json:"document"`
		Redacted   bool                  `json:"redacted,omitempty"`
		Generation int64                 `json:"generation"`
		Changes    map[engine.StepOp]int `json:"changes,omitempty"`
		DataLoss   []string              `json:"dataLoss,omitempty"`
		Operation  string                `json:"operation,omitempty"`
		Created    time.Time             `json:"created"`
	}
	if err := json.Unmarshal(data, &old); err != nil {
		return nil, err
	}
	return &Record{Format: RecordFormat, ID: old.ID, Stack: old.Stack, Plans: old.Plans, Door: engine.ManagedByAPI,
		Reason: Reason(old.Reason), Generation: old.Generation, Changes: old.Changes, DataLoss: old.DataLoss,
		Created: old.Created, Document: old.Document, Redacted: old.Redacted, Operation: old.Operation}, nil
}

// Plans reads the engine plans of rec; one gone (discarded meanwhile, by any replica) is an
// engine.ErrPlanNotFound.
func (s *Store) Plans(ctx context.Context, rec *Record) (map[string]*engine.Plan, error) {
	if s == nil || s.b == nil {
		return nil, ErrNoPlanStore
	}
	plans := make(map[string]*engine.Plan, len(rec.Plans))
	for stack, id := range rec.Plans {
		p, err := s.b.LoadPlan(ctx, stack, id)
		if err != nil {
			return nil, err
		}
		plans[stack] = p
	}
	return plans, nil
}

// Load returns the plans of stack's pending set id; engine.ErrPlanNotFound when id is not the
// pending set (discarded, replaced, or never saved).
func (s *Store) Load(ctx context.Context, stack, id string) (map[string]*engine.Plan, error) {
	rec, err := s.Pending(ctx, stack)
	switch {
	case errors.Is(err, ErrNoPending) || (err == nil && rec.ID != id):
		return nil, fmt.Errorf("%w: %s has no pending plan %s", engine.ErrPlanNotFound, stack, id)
	case err != nil:
		return nil, err
	}
	return s.Plans(ctx, rec)
}

// Discard removes stack's pending set of this door and the plans in it; none is no error.
func (s *Store) Discard(ctx context.Context, stack string) error {
	bkt, err := s.bucket(ctx, stack)
	if err != nil {
		return err
	}
	return s.discard(ctx, bkt, stack, false)
}

// discard drops stack's record (anyDoor: whichever door's) and its plans: every saved plan of
// the own stack, and of another stack (a personal tenant's job type's shared stack, where the
// job type's other tenants keep plans too) the ones no other pending record holds. The door's
// record in its older format goes too, so it never comes back as the pending set.
func (s *Store) discard(ctx context.Context, bkt *blob.Bucket, stack string, anyDoor bool) error {
	rec, key, err := s.pending(ctx, bkt, stack, anyDoor)
	if err != nil || rec == nil {
		return err
	}
	var errs []error
	for other := range rec.Plans {
		if other == stack {
			errs = append(errs, s.b.DiscardPlans(ctx, stack))
			continue
		}
		held, err := heldPlans(ctx, bkt, stack, other)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, s.b.DiscardPlans(ctx, other, held...))
	}
	keys := []string{key}
	if old := legacyPrefix(s.door); old != "" {
		keys = append(keys, old+stack+".json")
	}
	for _, key := range keys {
		if err := bkt.Delete(ctx, key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
			errs = append(errs, fmt.Errorf("plan store: %w", err))
		}
	}
	return errors.Join(errs...)
}

// heldPlans are the plan ids of stack other that pending records of objects but own hold, in
// every format.
func heldPlans(ctx context.Context, bkt *blob.Bucket, own, other string) ([]string, error) {
	var held []string
	for _, prefix := range []string{recordPrefix, operatorPrefix, apiPrefix} {
		it := bkt.List(&blob.ListOptions{Prefix: prefix})
		for {
			obj, err := it.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("plan store: %w", err)
			}
			stack := strings.TrimSuffix(strings.TrimPrefix(obj.Key, prefix), ".json")
			if stack == own || obj.IsDir {
				continue
			}
			data, err := bkt.ReadAll(ctx, obj.Key)
			if gcerrors.Code(err) == gcerrors.NotFound {
				continue // discarded meanwhile
			}
			if err != nil {
				return nil, fmt.Errorf("plan store: %w", err)
			}
			var ids struct {
				Plans map[string]string `json:"plans"`
			}
			if json.Unmarshal(data, &ids) == nil && ids.Plans[other] != "" {
				held = append(held, ids.Plans[other])
			}
		}
	}
	return held, nil
}
