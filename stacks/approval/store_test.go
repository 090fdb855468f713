package approval

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gocloud.dev/blob"
	"gocloud.dev/blob/memblob"
	"gocloud.dev/gcerrors"

	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

// memPlans is the engine's plan store in memory (stack/id → plan), beside a memblob bucket.
type memPlans struct {
	mu    sync.Mutex
	plans map[string]*engine.Plan
	bkt   *blob.Bucket
}

func newMemPlans() *memPlans {
	return &memPlans{plans: map[string]*engine.Plan{}, bkt: memblob.OpenBucket(nil)}
}

func (m *memPlans) StorePlan(_ context.Context, p *engine.Plan) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.plans[p.Stack+"/"+p.ID] = p
	return nil
}

func (m *memPlans) LoadPlan(_ context.Context, stack, id string) (*engine.Plan, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p, ok := m.plans[stack+"/"+id]; ok {
		return p, nil
	}
	return nil, engine.ErrPlanNotFound
}

func (m *memPlans) DiscardPlans(_ context.Context, stack string, keep ...string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, p := range m.plans {
		if strings.HasPrefix(k, stack+"/") && !contains(keep, p.ID) {
			delete(m.plans, k)
		}
	}
	return nil
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func (m *memPlans) Bucket(context.Context) (*blob.Bucket, error) { return m.bkt, nil }

func (m *memPlans) ids() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ids []string
	for k := range m.plans {
		ids = append(ids, k)
	}
	return ids
}

func exists(t *testing.T, bkt *blob.Bucket, key string) bool {
	t.Helper()
	ok, err := bkt.Exists(context.Background(), key)
	require.NoError(t, err)
	return ok
}

func propose(t *testing.T, s *Store, stack string, why Reason, plans ...*engine.Plan) *Record {
	t.Helper()
	m := map[string]*engine.Plan{}
	for _, p := range plans {
		m[p.Stack] = p
	}
	rec := NewRecord(stack, m, why, report(harmless), 3, time.Unix(100, 0))
	require.NoError(t, s.Propose(context.Background(), rec, m))
	return rec
}

// The store: a set of two stacks' plans under one id, replaced by the next proposal, gone
// after discard. (The operator's plan book, before it moved here.)
func TestStore(t *testing.T) {
	ctx := context.Background()
	store := newMemPlans()
	s := NewStore(store, engine.ManagedByOperator)
	p1, s1 := planOf(own, "1111111111111111"), planOf(shared, "2222222222222222")
	set := propose(t, s, own, ReasonManual, p1, s1)
	require.True(t, engine.ValidPlanID(set.ID))
	assert.NotEqual(t, p1.ID, set.ID, "a set of two has an id of its own")

	got, err := s.Load(ctx, own, set.ID)
	require.NoError(t, err)
	assert.Equal(t, map[string]*engine.Plan{own: p1, shared: s1}, got)
	_, err = s.Load(ctx, own, p1.ID)
	assert.True(t, errors.Is(err, engine.ErrPlanNotFound), "only the set's id approves it: %v", err)

	// A new proposal replaces the set, and its plans.
	p2 := planOf(own, "3333333333333333")
	set2 := propose(t, s, own, ReasonManual, p2)
	assert.Equal(t, p2.ID, set2.ID, "a single plan's id is the set's")
	_, err = s.Load(ctx, own, set.ID)
	assert.True(t, errors.Is(err, engine.ErrPlanNotFound))
	assert.Len(t, store.ids(), 1, "the replaced set's plans are discarded")

	require.NoError(t, s.Discard(ctx, own))
	_, err = s.Load(ctx, own, set2.ID)
	assert.True(t, errors.Is(err, engine.ErrPlanNotFound))
	assert.Empty(t, store.ids())
	_, err = s.Pending(ctx, own)
	assert.ErrorIs(t, err, ErrNoPending)
	require.NoError(t, s.Discard(ctx, own), "discarding nothing is no error")

	_, err = s.Plans(ctx, set2)
	assert.ErrorIs(t, err, engine.ErrPlanNotFound, "a plan gone meanwhile")

	err = NewStore(nil, engine.ManagedByOperator).Propose(ctx, NewRecord(own, map[string]*engine.Plan{own: p1}, ReasonManual, report(), 1, time.Now()), map[string]*engine.Plan{own: p1})
	assert.ErrorIs(t, err, ErrNoPlanStore, "an engine without a plan store gates nothing: it refuses")
	_, err = NewStore(nil, engine.ManagedByOperator).Load(ctx, own, p1.ID)
	assert.ErrorIs(t, err, ErrNoPlanStore)
}

// The record: one format for every door, under tfrs/approvals/<stack>.json, the door that
// proposed it and what a reviewer needs to know (never a property value).
func TestStoreRecord(t *testing.T) {
	ctx := context.Background()
	store := newMemPlans()
	s := NewStore(OnBucket(store.bkt, store), engine.ManagedByAPI)
	p1 := planOf(own, "1111111111111111")
	m := map[string]*engine.Plan{own: p1}
	rec := NewRecord(own, m, ReasonDataLoss, report(harmless, deletePG), 7, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	rec.Document, rec.Redacted, rec.Operation = json.RawMessage(`{"spec":{}}`), true, "op-1"
	require.NoError(t, s.Propose(ctx, rec, m))

	raw, err := store.bkt.ReadAll(ctx, "tfrs/approvals/"+own+".json")
	require.NoError(t, err)
	assert.JSONEq(t, `{"format":1,"id":"1111111111111111","stack":"tenant.default.r1","plans":{"tenant.default.r1":"1111111111111111"},
		"door":"api","reason":"DataLoss","generation":7,"changes":{"update":1,"delete":1},
		"dataLoss":["delete kubernetes:postgresql.cnpg.io/v1:Cluster x"],"created":"2026-01-02T03:04:05Z",
		"document":{"spec":{}},"redacted":true,"operation":"op-1"}`, string(raw))

	got, err := s.Pending(ctx, own)
	require.NoError(t, err)
	assert.Equal(t, rec, got)

	// A record of an unknown format is an error, never a guess.
	require.NoError(t, store.bkt.WriteAll(ctx, "tfrs/approvals/"+own+".json", []byte(`{"format":2,"id":"x"}`), nil))
	_, err = s.Pending(ctx, own)
	assert.ErrorContains(t, err, "record format 2")

	// Stack names are keys: one that is no stack name is refused before any read.
	_, err = s.Pending(ctx, "../../etc")
	assert.Error(t, err)
	assert.Error(t, s.Discard(ctx, "a/b"))
}

// Each door serves its own sets; a proposal replaces whichever set the stack had.
func TestStoreDoors(t *testing.T) {
	ctx := context.Background()
	store := newMemPlans()
	op, api := NewStore(store, engine.ManagedByOperator), NewStore(store, engine.ManagedByAPI)
	set := propose(t, op, own, ReasonManual, planOf(own, "1111111111111111"))
	_, err := api.Pending(ctx, own)
	assert.ErrorIs(t, err, ErrNoPending, "the API does not serve the operator's set")
	_, err = api.Load(ctx, own, set.ID)
	assert.ErrorIs(t, err, engine.ErrPlanNotFound)
	require.NoError(t, api.Discard(ctx, own))
	_, err = op.Pending(ctx, own)
	require.NoError(t, err, "nor discards it")

	propose(t, api, own, ReasonRequested, planOf(own, "2222222222222222"))
	_, err = op.Pending(ctx, own)
	assert.ErrorIs(t, err, ErrNoPending, "one pending set per stack")
	assert.Equal(t, []string{own + "/2222222222222222"}, store.ids())
}

// A personal tenant's set holds a plan of its job type's shared stack; the job type's other
// tenants hold plans of it too. Discarding one set keeps the shared plans other sets hold.
func TestDiscardKeepsSharedPlansOthersHold(t *testing.T) {
	ctx := context.Background()
	store := newMemPlans()
	s := NewStore(store, engine.ManagedByOperator)
	const own2 = "tenant.default.r2"
	propose(t, s, own, ReasonManual, planOf(own, "1111111111111111"), planOf(shared, "aaaaaaaaaaaaaaaa"))
	set2 := propose(t, s, own2, ReasonManual, planOf(own2, "2222222222222222"), planOf(shared, "bbbbbbbbbbbbbbbb"))
	require.NoError(t, s.Discard(ctx, own))
	assert.ElementsMatch(t, []string{own2 + "/2222222222222222", shared + "/bbbbbbbbbbbbbbbb"}, store.ids())
	_, err := s.Load(ctx, own2, set2.ID)
	require.NoError(t, err, "the other tenant's set still applies")
}

// The operator's plan book before this store, as it wrote it (operator/approval.go planSet).
type legacyOperatorSet struct {
	ID    string            `json:"id"`
	Plans map[string]string `json:"plans"` // stack → plan id
}

// A set the operator recorded under tfrs/operator/approvals/ is served as a Record of the
// operator's, approves and applies as before, and goes when replaced or discarded.
func TestStoreMigratesOperatorSets(t *testing.T) {
	ctx := context.Background()
	store := newMemPlans()
	p1, s1 := planOf(own, "1111111111111111"), planOf(shared, "2222222222222222")
	for _, p := range []*engine.Plan{p1, s1} {
		require.NoError(t, store.StorePlan(ctx, p))
	}
	old := legacyOperatorSet{ID: "5b1d0c6a0f7e2c44", Plans: map[string]string{own: p1.ID, shared: s1.ID}}
	data, err := json.Marshal(old)
	require.NoError(t, err)
	// The bytes as the old code recorded them.
	require.Equal(t, `{"id":"5b1d0c6a0f7e2c44","plans":{"tenant-shared.chat":"2222222222222222","tenant.default.r1":"1111111111111111"}}`, string(data))
	const key = "tfrs/operator/approvals/" + own + ".json"
	require.NoError(t, store.bkt.WriteAll(ctx, key, data, nil))

	s := NewStore(store, engine.ManagedByOperator)
	rec, err := s.Pending(ctx, own)
	require.NoError(t, err)
	assert.Equal(t, &Record{Format: RecordFormat, ID: old.ID, Stack: own, Plans: old.Plans, Door: engine.ManagedByOperator}, rec)
	plans, err := s.Load(ctx, own, old.ID)
	require.NoError(t, err, "the id status.pendingPlan shows still approves it")
	assert.Equal(t, map[string]*engine.Plan{own: p1, shared: s1}, plans)
	_, err = NewStore(store, engine.ManagedByAPI).Pending(ctx, own)
	assert.ErrorIs(t, err, ErrNoPending, "an operator set is not the API's")

	// A new proposal writes the new format only, and the old record is gone.
	p2 := planOf(own, "3333333333333333")
	propose(t, s, own, ReasonManual, p2)
	assert.False(t, exists(t, store.bkt, key))
	assert.True(t, exists(t, store.bkt, "tfrs/approvals/"+own+".json"))
	assert.Equal(t, []string{own + "/" + p2.ID}, store.ids(), "the old set's plans are discarded")

	// Discarding a stack that has only the old record removes it and its plans.
	require.NoError(t, store.bkt.WriteAll(ctx, key, data, nil))
	require.NoError(t, s.Discard(ctx, own)) // the new record
	_, err = s.Pending(ctx, own)
	assert.ErrorIs(t, err, ErrNoPending, "a discard also drops the old record: it never comes back")
	require.NoError(t, store.bkt.WriteAll(ctx, key, data, nil))
	for _, p := range []*engine.Plan{p1, s1} {
		require.NoError(t, store.StorePlan(ctx, p))
	}
	require.NoError(t, s.Discard(ctx, own))
	assert.False(t, exists(t, store.bkt, key))
	assert.Empty(t, store.ids())
}

// The HTTP API's pending plan before this store, as it wrote it (server/planstore.go
// PendingPlan).
type legacyPendingPlan struct {
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

// A pending plan the HTTP API recorded under tfrs/api/pending-plans/ is served as a Record of
// the API's with every field it had, applies as before, and goes when replaced or discarded.
func TestStoreMigratesAPIPendingPlans(t *testing.T) {
	ctx := context.Background()
	store := newMemPlans()
	const stack = "tenant.tfrs-system.globex"
	p1 := planOf(stack, "0a1b2c3d4e5f6a7b")
	require.NoError(t, store.StorePlan(ctx, p1))
	old := legacyPendingPlan{ID: p1.ID, Stack: stack, Plans: map[string]string{stack: p1.ID}, Reason: "DataLoss",
		Document: json.RawMessage(`{"apiVersion":"tfrs.io/v1alpha1","kind":"TFRTenant","metadata":{"name":"globex"},"spec":{"clusterRef":"dev"}}`),
		Redacted: true, Generation: 2,
		Changes:   map[engine.StepOp]int{engine.StepUpdate: 1, engine.StepReplace: 1},
		DataLoss:  []string{"replace kubernetes:postgresql.cnpg.io/v1:Cluster pg"},
		Operation: "0190a5d4-7c1e-7f00-8000-000000000001",
		Created:   time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)}
	data, err := json.Marshal(old)
	require.NoError(t, err)
	// The bytes as the old code recorded them.
	require.JSONEq(t, `{"id":"0a1b2c3d4e5f6a7b","stack":"tenant.tfrs-system.globex","plans":{"tenant.tfrs-system.globex":"0a1b2c3d4e5f6a7b"},
		"reason":"DataLoss","document":{"apiVersion":"tfrs.io/v1alpha1","kind":"TFRTenant","metadata":{"name":"globex"},"spec":{"clusterRef":"dev"}},
		"redacted":true,"generation":2,"changes":{"replace":1,"update":1},"dataLoss":["replace kubernetes:postgresql.cnpg.io/v1:Cluster pg"],
		"operation":"0190a5d4-7c1e-7f00-8000-000000000001","created":"2026-03-04T05:06:07Z"}`, string(data))
	const key = "tfrs/api/pending-plans/" + stack + ".json"
	require.NoError(t, store.bkt.WriteAll(ctx, key, data, nil))

	s := NewStore(OnBucket(store.bkt, store), engine.ManagedByAPI)
	rec, err := s.Pending(ctx, stack)
	require.NoError(t, err)
	assert.Equal(t, &Record{Format: RecordFormat, ID: old.ID, Stack: stack, Plans: old.Plans, Door: engine.ManagedByAPI,
		Reason: ReasonDataLoss, Generation: 2, Changes: old.Changes, DataLoss: old.DataLoss, Created: old.Created,
		Document: old.Document, Redacted: true, Operation: old.Operation}, rec)
	plans, err := s.Plans(ctx, rec)
	require.NoError(t, err)
	assert.Equal(t, map[string]*engine.Plan{stack: p1}, plans)
	_, err = NewStore(store, engine.ManagedByOperator).Pending(ctx, stack)
	assert.ErrorIs(t, err, ErrNoPending, "an API plan is not the operator's")

	// Served in the new format: a Record marshals to it.
	b, err := json.Marshal(rec)
	require.NoError(t, err)
	back, err := decodeRecord(b)
	require.NoError(t, err)
	assert.Equal(t, rec, back)

	// Discarded (an apply ran): the old record and the plan are gone.
	require.NoError(t, s.Discard(ctx, stack))
	assert.False(t, exists(t, store.bkt, key))
	assert.Empty(t, store.ids())
	_, err = s.Pending(ctx, stack)
	assert.ErrorIs(t, err, ErrNoPending)

	// Replaced by a new save: only the new format is written.
	require.NoError(t, store.bkt.WriteAll(ctx, key, data, nil))
	require.NoError(t, store.StorePlan(ctx, p1))
	p2 := planOf(stack, "1111111111111111")
	propose(t, s, stack, ReasonRequested, p2)
	assert.False(t, exists(t, store.bkt, key))
	rec, err = s.Pending(ctx, stack)
	require.NoError(t, err)
	assert.Equal(t, p2.ID, rec.ID)
	assert.Equal(t, []string{stack + "/" + p2.ID}, store.ids())
	var doc map[string]any
	raw, err := store.bkt.ReadAll(ctx, "tfrs/approvals/"+stack+".json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &doc))
	assert.Equal(t, float64(RecordFormat), doc["format"])
	assert.Equal(t, "api", doc["door"])
}

// A legacy record that does not decode is an error naming its key.
func TestStoreBadLegacyRecord(t *testing.T) {
	ctx := context.Background()
	store := newMemPlans()
	require.NoError(t, store.bkt.WriteAll(ctx, "tfrs/operator/approvals/"+own+".json", []byte("not json"), nil))
	_, err := NewStore(store, engine.ManagedByOperator).Pending(ctx, own)
	assert.ErrorContains(t, err, "tfrs/operator/approvals/"+own+".json")
	_, err = store.bkt.ReadAll(ctx, "tfrs/approvals/"+own+".json")
	assert.Equal(t, gcerrors.NotFound, gcerrors.Code(err), "reading writes nothing")
}
