package stacks

import (
	"encoding/base64"
	"strings"
	"sync"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// registration is what the mock monitor saw for one resource.
type registration struct {
	Type, Name, URN, Parent, ID string
	Deps                        []string
	Inputs                      resource.PropertyMap
	Custom, Read                bool
	Retain, Protect             bool
	Transforms                  int
}

// recordingMocks records every registration of a program run under pulumi.WithMocks, for the
// cluster and tenant program tests alike. Reads of Secrets answer with secretData (plain
// values, encoded here as the API server would).
type recordingMocks struct {
	stack      string // stack name, for URNs
	prefix     string // type-token prefix of the program's components, e.g. "tfrs:tenant:"
	secretData map[string]string

	mu   sync.Mutex
	regs []*registration
}

func (m *recordingMocks) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	r := &registration{Type: args.TypeToken, Name: args.Name, Inputs: args.Inputs, Custom: args.Custom}
	state := args.Inputs
	if rpc := args.RegisterRPC; rpc != nil {
		r.Parent, r.Deps, r.Transforms = rpc.GetParent(), rpc.GetDependencies(), len(rpc.GetTransforms())
		r.Retain, r.Protect = rpc.GetRetainOnDelete(), rpc.GetProtect()
	}
	if rpc := args.ReadRPC; rpc != nil {
		r.Parent, r.Read, r.ID = rpc.GetParent(), true, args.ID
		if args.TypeToken == "kubernetes:core/v1:Secret" {
			data := resource.PropertyMap{}
			for k, v := range m.secretData {
				data[resource.PropertyKey(k)] = resource.NewProperty(base64.StdEncoding.EncodeToString([]byte(v)))
			}
			state = resource.PropertyMap{"data": resource.MakeSecret(resource.NewProperty(data))}
		}
	}
	parentType := tokens.Type("")
	if p := resource.URN(r.Parent); p != "" && p.QualifiedType() != resource.RootStackType {
		parentType = p.QualifiedType()
	}
	r.URN = string(resource.NewURN(tokens.QName(m.stack), "tfrs", parentType, tokens.Type(r.Type), r.Name))
	m.mu.Lock()
	defer m.mu.Unlock()
	m.regs = append(m.regs, r)
	return args.Name + "-id", state, nil
}

func (m *recordingMocks) Call(pulumi.MockCallArgs) (resource.PropertyMap, error) {
	return resource.PropertyMap{}, nil
}

func (m *recordingMocks) byURN() map[string]*registration {
	out := map[string]*registration{}
	for _, r := range m.regs {
		out[r.URN] = r
	}
	return out
}

// components are the registered components of the program, by id (their Pulumi name).
func (m *recordingMocks) components() map[string]*registration {
	out := map[string]*registration{}
	for _, r := range m.regs {
		if strings.HasPrefix(r.Type, m.prefix) {
			out[r.Name] = r
		}
	}
	return out
}

// owner is the top-level component a registration belongs to.
func (m *recordingMocks) owner(urns map[string]*registration, r *registration) *registration {
	for {
		p, ok := urns[r.Parent]
		if !ok {
			return r
		}
		r = p
	}
}

// edges are the component-level DependsOn edges as the engine would see them: each
// dependency URN a component registration carries (Pulumi expands DependsOn on a component to
// its children) is mapped to the component that owns it.
func (m *recordingMocks) edges() []GraphEdge {
	urns := m.byURN()
	set := map[GraphEdge]bool{}
	for id, c := range m.components() {
		for _, d := range c.Deps {
			dep, ok := urns[d]
			if !ok {
				panic("dependency on an unregistered resource " + d)
			}
			if o := m.owner(urns, dep); o.Name != id {
				set[GraphEdge{From: o.Name, To: id}] = true
			}
		}
	}
	var out []GraphEdge
	for e := range set {
		out = append(out, e)
	}
	sortEdges(out)
	return out
}

func (m *recordingMocks) find(t *testing.T, typ, name string) *registration {
	t.Helper()
	var found []*registration
	for _, r := range m.regs {
		if r.Type == typ && (name == "" || r.Name == name) {
			found = append(found, r)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d registrations of %s %q, want 1", len(found), typ, name)
	}
	return found[0]
}

func (m *recordingMocks) all(typ string) []*registration {
	var out []*registration
	for _, r := range m.regs {
		if r.Type == typ {
			out = append(out, r)
		}
	}
	return out
}
