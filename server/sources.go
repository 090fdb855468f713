package server

import (
	"context"
	"fmt"

	"github.com/tfrs-io/tfrs-operator/api/stackname"
	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/internal/sourcepolicy"
	"github.com/tfrs-io/tfrs-operator/stacks"
)

// DefaultSourcePolicy is the HTTP API's source policy when Config.Sources is nil, the
// strictest of the doors: no local path, only the pinned upstream hosts, no private address,
// Secrets only from the operator's namespace (and, for a namespaced object, its own).
func DefaultSourcePolicy() *sourcepolicy.Policy {
	return &sourcepolicy.Policy{Hosts: stacks.PinnedHosts(), SecretNamespaces: []string{v1alpha1.DefaultOperatorNamespace}}
}

// SourceError refuses a request whose spec names a source the policy forbids (403). Fields
// names each refused field.
type SourceError struct{ Fields []FieldProblem }

func (e *SourceError) Error() string {
	return fmt.Sprintf("%d source(s) refused by the source policy", len(e.Fields))
}

// Is makes errors.Is(err, sourcepolicy.ErrForbidden) true.
func (e *SourceError) Is(target error) bool { return target == sourcepolicy.ErrForbidden }

// checkSources applies the source policy to a valid object. A tenant may also use the hosts
// of its cluster's own mirrors, when this API holds the cluster's spec.
func (s *Server) checkSources(ctx context.Context, obj v1alpha1.Object) error {
	pol := s.cfg.Sources
	if p := obj.Parent(); p.Kind == v1alpha1.KindTFRCluster && len(obj.Sources()) > 0 {
		hosts, err := s.clusterMirrors(ctx, p.Name)
		if err != nil {
			return err
		}
		pol = pol.WithHosts(hosts...)
	}
	if errs := pol.Check(obj); len(errs) > 0 {
		return &SourceError{Fields: fieldProblems(errs)}
	}
	return nil
}

// clusterMirrors are the mirror hosts of the stored spec of cluster name (none when the API
// holds no spec for it: a cluster made by another door is read by its stack only).
func (s *Server) clusterMirrors(ctx context.Context, name string) ([]string, error) {
	stack, err := stackname.Of(clusterKind.level, "", name)
	if err != nil {
		return nil, nil // an invalid clusterRef is validation's to report
	}
	rec, err := s.record(ctx, stack)
	if err != nil || rec == nil {
		return nil, err
	}
	obj, err := clusterKind.fromRecord(rec)
	if err != nil {
		return nil, err
	}
	return sourcepolicy.MirrorHosts(obj), nil
}
