package stacks

import (
	"strings"
	"sync"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/internal/pulumitest"
)

// registration is what the mock monitor saw for one resource.
type registration = pulumitest.Registration

// recordingMocks records every registration of a program run under pulumi.WithMocks, for the
// cluster, tenant and server program tests alike. Reads of Secrets answer with secretData
// (plain values, encoded as the API server would). On top of internal/pulumitest's recording
// it knows the programs' components and their edges.
type recordingMocks struct {
	stack      string // stack name, for URNs
	prefix     string // type-token prefix of the program's components, e.g. "tfrs:tenant:"
	secretData map[string]string

	mu   sync.Mutex
	regs pulumitest.Registrations
}

func (m *recordingMocks) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	r, state := pulumitest.Record(args, pulumitest.DefaultProject, m.stack, m.secretData)
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
	return m.regs.Find(t, typ, name)
}

func (m *recordingMocks) all(typ string) []*registration { return m.regs.All(typ) }
