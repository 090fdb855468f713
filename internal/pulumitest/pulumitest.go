// Package pulumitest is the recording mock monitor that the component and program tests run
// Pulumi programs under (pulumi.WithMocks), and the helpers to look at what was registered.
//
// Every registration is answered with its inputs as its state (so outputs resolve to what the
// program asked for) and recorded with its parent, dependencies, options and inputs. Reads of
// Secrets (corev1.GetSecret) answer with SecretData, base64-encoded as the API server would,
// and marked secret as the Kubernetes provider marks them.
package pulumitest

import (
	"encoding/base64"
	"reflect"
	"sort"
	"sync"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Defaults of Mocks.Project and Mocks.Stack.
const (
	DefaultProject = "tfrs"
	DefaultStack   = "test"
)

// secretType is the token of a read Secret.
const secretType = "kubernetes:core/v1:Secret"

// Registration is what the mock monitor saw for one resource.
type Registration struct {
	Type, Name, URN, Parent string
	// ID is the id a read (Get) asked for.
	ID              string
	Deps            []string
	Inputs          resource.PropertyMap
	Custom, Read    bool
	Retain, Protect bool
	Transforms      int
	// Provider is the explicit provider reference ("urn::id"), "" for the default provider.
	Provider string
}

// Registrations are registrations in the order the monitor saw them.
type Registrations []*Registration

// Find returns the one registration of type typ (and name, unless empty); anything but
// exactly one fails the test.
func (rs Registrations) Find(t testing.TB, typ, name string) *Registration {
	t.Helper()
	var found []*Registration
	for _, r := range rs {
		if r.Type == typ && (name == "" || r.Name == name) {
			found = append(found, r)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d registrations of %s %q, want 1 (have %v)", len(found), typ, name, rs.Names())
	}
	return found[0]
}

// All returns the registrations of type typ.
func (rs Registrations) All(typ string) Registrations {
	var out Registrations
	for _, r := range rs {
		if r.Type == typ {
			out = append(out, r)
		}
	}
	return out
}

// Names lists "type::name" of every registration, for failure messages.
func (rs Registrations) Names() []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Type+"::"+r.Name)
	}
	return out
}

// Record turns one mock registration into a Registration (its URN built as the engine would
// for project and stack) and the state to answer with. It is the whole of Mocks.NewResource,
// for monitors that keep their own list.
func Record(args pulumi.MockResourceArgs, project, stack string, secretData map[string]string) (*Registration, resource.PropertyMap) {
	r := &Registration{Type: args.TypeToken, Name: args.Name, Inputs: args.Inputs, Custom: args.Custom}
	state := args.Inputs
	if rpc := args.RegisterRPC; rpc != nil {
		r.Parent, r.Deps, r.Transforms = rpc.GetParent(), rpc.GetDependencies(), len(rpc.GetTransforms())
		r.Retain, r.Protect, r.Provider = rpc.GetRetainOnDelete(), rpc.GetProtect(), rpc.GetProvider()
	}
	if rpc := args.ReadRPC; rpc != nil {
		r.Parent, r.Read, r.ID = rpc.GetParent(), true, args.ID
		if args.TypeToken == secretType {
			data := resource.PropertyMap{}
			for k, v := range secretData {
				data[resource.PropertyKey(k)] = resource.NewProperty(base64.StdEncoding.EncodeToString([]byte(v)))
			}
			// The type the API server would show: a registry credential's key makes it one.
			typ := "Opaque"
			if _, ok := secretData[".dockerconfigjson"]; ok {
				typ = "kubernetes.io/dockerconfigjson"
			}
			state = resource.PropertyMap{"data": resource.MakeSecret(resource.NewProperty(data)), "type": resource.NewProperty(typ)}
		}
	}
	parentType := tokens.Type("")
	if p := resource.URN(r.Parent); p != "" && p.QualifiedType() != resource.RootStackType {
		parentType = p.QualifiedType()
	}
	r.URN = string(resource.NewURN(tokens.QName(stack), tokens.PackageName(project), parentType, tokens.Type(r.Type), r.Name))
	return r, state
}

// Mocks is a pulumi.MockResourceMonitor that records every registration. The zero value
// works (project DefaultProject, stack DefaultStack, no Secret data).
type Mocks struct {
	Project, Stack string
	// SecretData answers every read of a Secret (plain values).
	SecretData map[string]string

	mu   sync.Mutex
	regs Registrations
}

// NewResource records the registration and answers with its inputs.
func (m *Mocks) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	r, state := Record(args, m.project(), m.stack(), m.SecretData)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.regs = append(m.regs, r)
	return args.Name + "-id", state, nil
}

// Call answers every invoke with nothing.
func (m *Mocks) Call(pulumi.MockCallArgs) (resource.PropertyMap, error) {
	return resource.PropertyMap{}, nil
}

func (m *Mocks) project() string {
	if m.Project == "" {
		return DefaultProject
	}
	return m.Project
}

func (m *Mocks) stack() string {
	if m.Stack == "" {
		return DefaultStack
	}
	return m.Stack
}

// Regs are the registrations so far (a copy).
func (m *Mocks) Regs() Registrations {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append(Registrations(nil), m.regs...)
}

// Find is Regs().Find.
func (m *Mocks) Find(t testing.TB, typ, name string) *Registration {
	t.Helper()
	return m.Regs().Find(t, typ, name)
}

// All is Regs().All.
func (m *Mocks) All(typ string) Registrations { return m.Regs().All(typ) }

// RunErr runs program under these mocks.
func (m *Mocks) RunErr(program pulumi.RunFunc) error {
	return pulumi.RunErr(program, pulumi.WithMocks(m.project(), m.stack(), m))
}

// Run runs program under these mocks and fails the test on error.
func (m *Mocks) Run(t testing.TB, program pulumi.RunFunc) {
	t.Helper()
	if err := m.RunErr(program); err != nil {
		t.Fatal(err)
	}
}

// AssertChildren checks that every registration but the component of type componentType has
// that component as its parent, and that they are exactly want ("type::name", any order).
func (m *Mocks) AssertChildren(t testing.TB, componentType string, want ...string) *Registration {
	t.Helper()
	regs := m.Regs()
	c := regs.Find(t, componentType, "")
	var got []string
	for _, r := range regs {
		if r == c {
			continue
		}
		if r.Parent != c.URN {
			t.Errorf("%s %s: parent %q, want the component", r.Type, r.Name, r.Parent)
		}
		got = append(got, r.Type+"::"+r.Name)
	}
	sort.Strings(got)
	want = append([]string(nil), want...)
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("children = %v, want %v", got, want)
	}
	return c
}

// ChildLister is a component that names its direct children (for DependsOn).
type ChildLister interface{ Children() []pulumi.Resource }

// AssertChildrenListed runs create under fresh mocks and checks the component of type typ it
// makes: every other registration has it as parent, and its Children() lists exactly the
// resources it registered (reads of existing objects excepted), so that dependants waiting
// on the listed children wait for all of them.
func AssertChildrenListed(t *testing.T, typ string, create func(ctx *pulumi.Context) (ChildLister, error)) {
	t.Helper()
	m := &Mocks{}
	var urns []func() pulumi.URN
	m.Run(t, func(ctx *pulumi.Context) error {
		c, err := create(ctx)
		if err != nil {
			return err
		}
		for _, r := range c.Children() {
			urns = append(urns, Collect[pulumi.URN](r.URN()))
		}
		return nil
	})
	regs := m.Regs()
	comp := regs.Find(t, typ, "")
	var want, got []string
	for _, r := range regs {
		if r == comp {
			continue
		}
		if r.Parent != comp.URN {
			t.Errorf("%s %s: parent %q, want the component", r.Type, r.Name, r.Parent)
		}
		if !r.Read {
			want = append(want, r.URN)
		}
	}
	for _, u := range urns {
		got = append(got, string(u()))
	}
	sort.Strings(got)
	sort.Strings(want)
	Eq(t, "Children()", got, want)
}

// Plain turns a property map into plain Go values, secrets unwrapped, for comparisons.
func Plain(pm resource.PropertyMap) map[string]any { return pm.MapRepl(nil, unwrapSecret) }

func unwrapSecret(v resource.PropertyValue) (any, bool) {
	if v.IsSecret() {
		return v.SecretValue().Element.MapRepl(nil, unwrapSecret), true
	}
	return nil, false
}

// At digs a value out of nested maps and slices: At(t, m, "spec", "ports", 0, "port").
func At(t testing.TB, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("at %v: %T is not a map", path, v)
			}
			v = m[k]
		case int:
			s, ok := v.([]any)
			if !ok || k >= len(s) {
				t.Fatalf("at %v: %T has no index %d", path, v, k)
			}
			v = s[k]
		default:
			t.Fatalf("at %v: path element %T is neither a key nor an index", path, p)
		}
	}
	return v
}

// Eq reports (without stopping the test) when got and want differ.
func Eq(t testing.TB, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %#v, want %#v", what, got, want)
	}
}

// Collect returns a function that, once the run has finished, returns the output's value.
func Collect[T any](o pulumi.Output) func() T {
	var (
		wg  sync.WaitGroup
		val T
	)
	wg.Add(1)
	o.ApplyT(func(v T) T {
		val = v
		wg.Done()
		return v
	})
	return func() T { wg.Wait(); return val }
}
