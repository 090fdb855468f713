package pulumitest

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Why this check exists: the Go SDK attaches a child to its parent inside the child's own
// registration goroutine, and expands pulumi.DependsOn(component) into the children attached
// at the moment the dependant's goroutine looks (pulumi/pulumi#7833). So a dependant can
// only be sure to wait for a component's children through the list the component returns
// (Children()), and that list is only complete if every child exists when the constructor
// returns: one created later (inside an ApplyT, a goroutine, after an output resolves) is in
// no list and is waited for by no one.

// gateWait bounds how long a constructor may wait for a child's registration before the
// check gives up on it (a constructor must never wait on one: in an up that is the child's
// creation, which would serialise the program). A variable for the check's own test.
var gateWait = 30 * time.Second

// gatedMocks answers no registration but the component's own (of type component) until open
// is closed. Until then no child's output resolves, so nothing that waits on one (an ApplyT,
// a goroutine reading an output) can run: whatever such code registers is registered after
// the constructor returned, every time. The component's own registration is answered at
// once, as the engine does: RegisterResourceOutputs waits for the component's URN.
type gatedMocks struct {
	*Mocks
	component string
	open      <-chan struct{}
}

func (g gatedMocks) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	if args.Custom || args.TypeToken != g.component {
		<-g.open
	}
	return g.Mocks.NewResource(args)
}

// AssertChildrenAtReturn runs create under these mocks, held so that no registration is
// answered before create returns, and checks the component of type typ it makes: every
// resource it registers (reads included) is constructed before the constructor returns,
// has the component as parent, and is in the Children() the constructor returned. A
// component that registers a child late, or forgets to list one, fails it every run.
func (m *Mocks) AssertChildrenAtReturn(t testing.TB, typ string, create func(ctx *pulumi.Context) (ChildLister, error)) {
	t.Helper()
	problems, err := m.childrenAtReturn(typ, create)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// childrenAtReturn is AssertChildrenAtReturn's check: what is wrong, one line each.
func (m *Mocks) childrenAtReturn(typ string, create func(ctx *pulumi.Context) (ChildLister, error)) ([]string, error) {
	open := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(open) }) }
	var waited atomic.Bool // the constructor waited on a registration: released by the timer
	timer := time.AfterFunc(gateWait, func() { waited.Store(true); release() })
	defer timer.Stop()

	var (
		mu       sync.Mutex
		returned bool
		late     []string
		listed   []func() pulumi.URN
	)
	program := func(ctx *pulumi.Context) error {
		// A stack transformation runs synchronously when a resource is constructed, before
		// the SDK hands it to its registration goroutine: it sees construction order.
		err := ctx.RegisterStackTransformation(func(a *pulumi.ResourceTransformationArgs) *pulumi.ResourceTransformationResult {
			mu.Lock()
			defer mu.Unlock()
			if returned {
				late = append(late, a.Type+"::"+a.Name)
			}
			return nil
		})
		if err != nil {
			return err
		}
		c, err := create(ctx)
		mu.Lock()
		returned = true
		mu.Unlock()
		if err == nil {
			// The list as a dependant sees it: taken at return, before anything resolves.
			for _, r := range c.Children() {
				listed = append(listed, Collect[pulumi.URN](r.URN()))
			}
		}
		release()
		return err
	}
	if err := pulumi.RunErr(program, pulumi.WithMocks(m.project(), m.stack(), gatedMocks{m, typ, open})); err != nil {
		return nil, err
	}
	if waited.Load() {
		return []string{"the constructor waited for a registration to be answered"}, nil
	}

	var problems []string
	for _, l := range late {
		problems = append(problems, l+" is constructed after the constructor returned")
	}
	regs := m.Regs()
	comps := regs.All(typ)
	if len(comps) != 1 {
		return nil, fmt.Errorf("%d registrations of %s, want 1 (have %v)", len(comps), typ, regs.Names())
	}
	comp := comps[0]
	inList := map[string]bool{}
	for _, u := range listed {
		inList[string(u())] = true
	}
	for _, r := range regs {
		if r == comp {
			continue
		}
		if r.Parent != comp.URN {
			problems = append(problems, r.Type+"::"+r.Name+": parent "+r.Parent+", want the component")
		}
		if !inList[r.URN] {
			problems = append(problems, r.Type+"::"+r.Name+" is not in Children()")
		}
		delete(inList, r.URN)
	}
	for u := range inList {
		problems = append(problems, u+" is in Children() but not registered under the component")
	}
	sort.Strings(problems)
	return problems, nil
}
