package stacks

import (
	"fmt"
	"slices"
	"sort"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// The component graph every program registers through: the graph types `tfrs graph` prints
// (graph_format.go renders them), the steps a program lists, the builder that registers them
// with their DependsOn edges, and the mocks the Graph functions run a program under.

// GraphNode is a component of a stack's graph.
type GraphNode struct {
	// ID is the node id, e.g. "istio".
	ID string `json:"id"`
	// Type is the component's Pulumi type token, e.g. "tfrs:cluster:Istio".
	Type string `json:"type"`
	// DependsOn are the ids of the components it waits for.
	DependsOn []string `json:"dependsOn,omitempty"`
	// External marks a node of another stack that this one waits for (a gate the program
	// checks before registering anything, e.g. the cluster's RabbitMQ operator for a
	// tenant). It is not registered by this stack.
	External bool `json:"external,omitempty"`
}

// GraphSkip is a component the program did not install, and why.
type GraphSkip struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// GraphEdge From -> To: To waits for From.
type GraphEdge struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Graph is the component graph a program registered, in registration order.
type Graph struct {
	Nodes   []GraphNode `json:"nodes"`
	Skipped []GraphSkip `json:"skipped,omitempty"`
}

// Edges lists every edge, sorted.
func (g *Graph) Edges() []GraphEdge {
	var out []GraphEdge
	for _, n := range g.Nodes {
		for _, d := range n.DependsOn {
			out = append(out, GraphEdge{From: d, To: n.ID})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].From != out[j].From {
			return out[i].From < out[j].From
		}
		return out[i].To < out[j].To
	})
	return out
}

// step is one component of a program. Every program lists its steps the same way: a slice
// in registration order, dependencies first (the builder refuses a step listed before what
// it depends on), so the order is read off the list and nowhere else.
type step struct {
	// id is the graph node id and the component's Pulumi name.
	id string
	// typ is the component's type token, for the graph.
	typ string
	// skip says why the step does not run ("" = it runs). A skipped step takes its
	// dependants with it unless the level's dependsOn table leaves it out of their lists
	// (the server's optional Jobs).
	skip string
	// create registers the component with the builder's DependsOn options.
	create func(opts ...pulumi.ResourceOption) (pulumi.Resource, error)
}

// unlessEnabled is the skip reason of a component the spec switches on and off.
func unlessEnabled(enabled bool) string {
	if enabled {
		return ""
	}
	return "disabled"
}

// graphBuilder registers steps with DependsOn on the components its dependsOn table names
// (clusterDependsOn, tenantDependsOn, serverDeps), applying the removal rule, and records
// the graph.
type graphBuilder struct {
	graph     *Graph
	built     map[string]pulumi.Resource
	seen      map[string]bool
	dependsOn map[string][]string
	// external are dependencies on other stacks: recorded in the graph, checked by the
	// program before anything is registered, never passed to DependsOn.
	external map[string]bool
}

// newGraphBuilder builds over dependsOn, recording into g when it is set.
func newGraphBuilder(g *Graph, dependsOn map[string][]string) *graphBuilder {
	return &graphBuilder{graph: g, built: map[string]pulumi.Resource{}, seen: map[string]bool{}, dependsOn: dependsOn, external: map[string]bool{}}
}

// addExternal records nodes of other stacks (id → type token) this one waits for.
func (b *graphBuilder) addExternal(nodes map[string]string) {
	for id, typ := range nodes {
		b.external[id] = true
		if b.graph != nil {
			b.graph.Nodes = append(b.graph.Nodes, GraphNode{ID: id, Type: typ, External: true})
		}
	}
}

// register adds the steps in their order.
func (b *graphBuilder) register(steps []step) error {
	for _, s := range steps {
		if err := b.add(s); err != nil {
			return err
		}
	}
	return nil
}

// childLister is a component that names its direct children. Pulumi's Go SDK attaches
// children to a component asynchronously, so DependsOn on the component alone can miss the
// ones attached a moment late; depending on the listed children as well cannot.
type childLister interface{ Children() []pulumi.Resource }

func (b *graphBuilder) add(s step) error {
	b.seen[s.id] = true
	deps := b.dependsOn[s.id]
	reason := s.skip
	var after []pulumi.Resource
	for _, d := range deps {
		if b.external[d] {
			continue
		}
		if !b.seen[d] {
			// A step listed before its dependency would silently lose it; fail loudly.
			return fmt.Errorf("graph: %s is registered before %s, which it depends on", s.id, d)
		}
		r, ok := b.built[d]
		if !ok && reason == "" {
			reason = "depends on " + d + ", which is not installed"
		}
		if r == nil {
			continue
		}
		cl, ok := r.(childLister)
		if !ok {
			// Without the list the edge holds only when Pulumi happens to have attached
			// every child already: a flaky order. Every component embeds children.Set.
			return fmt.Errorf("graph: %s (a dependency of %s) does not list its children", d, s.id)
		}
		after = append(after, r)
		after = append(after, cl.Children()...)
	}
	if reason != "" {
		b.skipped(s.id, reason)
		return nil
	}
	var opts []pulumi.ResourceOption
	if len(after) > 0 {
		opts = append(opts, pulumi.DependsOn(after))
	}
	r, err := s.create(opts...)
	if err != nil {
		return fmt.Errorf("%s: %w", s.id, err)
	}
	b.built[s.id] = r
	if b.graph != nil {
		b.graph.Nodes = append(b.graph.Nodes, GraphNode{ID: s.id, Type: s.typ, DependsOn: slices.Clone(deps)})
	}
	return nil
}

// skipped records a component that is not installed.
func (b *graphBuilder) skipped(id, reason string) {
	if b.graph != nil {
		b.graph.Skipped = append(b.graph.Skipped, GraphSkip{ID: id, Reason: reason})
	}
}

// mockGraph runs a program under Pulumi mocks (no engine, no cluster) as stack and returns
// the graph it records: the body of ClusterGraph, TenantGraph and ServerGraph.
func mockGraph(stack string, mocks graphMocks, program func(*Graph) pulumi.RunFunc) (*Graph, error) {
	g := &Graph{}
	if err := pulumi.RunErr(program(g), pulumi.WithMocks("tfrs", stack, mocks)); err != nil {
		return nil, err
	}
	return g, nil
}

// graphMocks answer every registration with its inputs. A read Secret (the registry password)
// gets placeholder data under the keys the program will look up, since nothing real is read.
type graphMocks struct{ secretKeys []string }

func (m graphMocks) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	if args.ReadRPC != nil && args.TypeToken == "kubernetes:core/v1:Secret" {
		data := resource.PropertyMap{}
		for _, k := range m.secretKeys {
			data[resource.PropertyKey(k)] = resource.NewProperty("cGxhY2Vob2xkZXI=") // "placeholder"
		}
		return args.ID, resource.PropertyMap{"data": resource.NewProperty(data)}, nil
	}
	return args.Name, args.Inputs, nil
}

func (graphMocks) Call(pulumi.MockCallArgs) (resource.PropertyMap, error) {
	return resource.PropertyMap{}, nil
}
