package kinds

import (
	"context"
	"fmt"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/server"
	"github.com/tfrs-io/tfrs-operator/stacks"
)

// Parents reads what a child program takes from its parent's stack. Each method returns a
// *ParentError while the parent is missing or not ready.
type Parents interface {
	Cluster(ctx context.Context, stack string) (stacks.TenantCluster, error)
	Tenant(ctx context.Context, stack string) (stacks.TenantOutputs, error)
}

// Namespaces reads a tenant's target namespace before anything runs (stacks/nsowner.go): the
// namespace as the cluster has it and whether the stack that creates it already manages it.
// A nil state means it could not be read (no cluster: render mode). A Parents that also
// implements Namespaces (the runner's) gets every tenant's namespace checked before its
// programs are returned, and the state passed into them.
type Namespaces interface {
	Namespace(ctx context.Context, name, stack string) (*stacks.NamespaceState, error)
}

// APIServers is what reads where the cluster's API server answers (stacks.APIServer). A
// Parents that also implements it (the runner's) gets a cluster's program the addresses its
// egress policy needs; without it (rendering) the cluster exports none.
type APIServers interface {
	APIServer(ctx context.Context) (stacks.APIServer, error)
}

// KubeVersions is what reads the cluster's Kubernetes version. A Parents that also implements
// it (the runner's) gets a cluster's components checked against the support matrix
// (stacks/support.go) before its program is returned; without it (rendering), or when it reads
// "" (no cluster to ask), nothing is checked.
type KubeVersions interface {
	KubeVersion(ctx context.Context) (string, error)
}

// Programs are the programs of one prepared object's stacks (its Target), over the outputs
// of its parent.
type Programs struct {
	// Own is the program of the object's own stack. shared is the outputs of the object's
	// shared stack, which a personal tenant's own stack re-exports; nil when the object has
	// no shared stack.
	Own func(shared *stacks.TenantOutputs) pulumi.RunFunc
	// Shared is the program of the object's shared stack (Target.Shared), nil when it has
	// none; JobType is the job type whose personal tenants share that stack.
	Shared  pulumi.RunFunc
	JobType string
	// Wait is set when the parent's stack is up but its outputs say it cannot take the object
	// yet (a cluster whose RabbitMQ operator is not ready): a *ParentError the runner waits on
	// before running anything. Program (the stock-CLI entry) leaves it to the programs: the
	// one that needs the parent's part refuses to run without it.
	Wait error
	// Namespace is the one namespace the programs may write to ("" for a cluster, which is
	// cluster-wide): the runner applies their stacks as that namespace's applier.
	Namespace string
	// Support are a cluster's components outside their upstream support that were not
	// refused (warnings), or unknown to the matrix.
	Support []stacks.SupportFinding
}

// ProgramsOf reads the parent outputs the programs of t/obj (from Prepare) consume through
// p and returns the programs.
func ProgramsOf(ctx context.Context, t Target, obj v1alpha1.Object, p Parents) (*Programs, error) {
	k, err := programOf(obj)
	if err != nil {
		return nil, err
	}
	return k.programs(ctx, t, p)
}

// Graph runs obj's program under mocks (no engine, no cluster) and returns the component
// graph it registers; obj is defaulted and validated first by the caller (Prepare).
func Graph(obj v1alpha1.Object) (*stacks.Graph, error) {
	k, err := programOf(obj)
	if err != nil {
		return nil, fmt.Errorf("graph: unsupported object %T", obj)
	}
	return k.graph()
}

// kindPrograms is one kind's row of the program table.
type kindPrograms interface {
	programs(ctx context.Context, t Target, p Parents) (*Programs, error)
	graph() (*stacks.Graph, error)
	// immutable lists the fields that may never change once the object's stack exists, by
	// field path, with their effective values (defaults applied), as the object's
	// ValidateUpdate treats them (see Immutable).
	immutable() map[string]string
}

// programOf is the program table: the one dispatch on the concrete kind in tfrs. A new kind
// gets a row here and implements v1alpha1.Object; nothing else switches on kinds.
func programOf(obj v1alpha1.Object) (kindPrograms, error) {
	switch x := obj.(type) {
	case *v1alpha1.TFRCluster:
		return clusterPrograms{x}, nil
	case *v1alpha1.TFRTenant:
		return tenantPrograms{x}, nil
	case *v1alpha1.TFRServer:
		return serverPrograms{x}, nil
	}
	return nil, fmt.Errorf("runner: unsupported object type %T", obj)
}

// clusterPrograms: a cluster's one stack reads no parent.
type clusterPrograms struct{ x *v1alpha1.TFRCluster }

func (k clusterPrograms) programs(ctx context.Context, _ Target, p Parents) (*Programs, error) {
	var api stacks.APIServer
	if r, ok := p.(APIServers); ok {
		var err error
		if api, err = r.APIServer(ctx); err != nil {
			return nil, fmt.Errorf("reading the API server's addresses (default/kubernetes): %w", err)
		}
	}
	var support []stacks.SupportFinding
	if r, ok := p.(KubeVersions); ok {
		kube, err := r.KubeVersion(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading the cluster's Kubernetes version: %w", err)
		}
		if kube != "" { // "": no cluster to ask (a reader without discovery)
			support = stacks.SupportFindings(k.x, kube, time.Now())
			if errs := stacks.SupportErrors(support); len(errs) > 0 {
				return nil, &InvalidError{Errors: errs}
			}
		}
	}
	return &Programs{Own: func(*stacks.TenantOutputs) pulumi.RunFunc {
		return stacks.Cluster(stacks.ClusterInput{Cluster: k.x, APIServer: api})
	}, Support: support}, nil
}

func (k clusterPrograms) graph() (*stacks.Graph, error) { return stacks.ClusterGraph(k.x) }

// immutable: a cluster's name is its stack; nothing in its spec is fixed.
func (clusterPrograms) immutable() map[string]string { return nil }

// tenantPrograms: a tenant reads its cluster's stack. A personal tenant also has its job
// type's shared stack, which owns the middleware; its own stack re-exports the shared outputs.
type tenantPrograms struct{ x *v1alpha1.TFRTenant }

func (k tenantPrograms) programs(ctx context.Context, t Target, p Parents) (*Programs, error) {
	cl, err := p.Cluster(ctx, t.Parent)
	if err != nil {
		return nil, t.parentErr(err)
	}
	// The namespace is created by the shared stack of a personal tenant, else by its own.
	owner := t.Stack
	if t.Shared != "" {
		owner = t.Shared
	}
	var ns *stacks.NamespaceState
	// While the cluster cannot take the tenant the runner only waits: nothing to read yet.
	if r, ok := p.(Namespaces); ok && cl.RabbitMQOperatorReady {
		if ns, err = r.Namespace(ctx, k.x.TargetNamespace(), owner); err != nil {
			return nil, fmt.Errorf("spec.namespace: reading namespace %s: %w", k.x.TargetNamespace(), err)
		}
	}
	if errs := stacks.TenantNamespaceErrors(k.x, cl, owner, ns); len(errs) > 0 {
		return nil, &InvalidError{Errors: errs}
	}
	progs := &Programs{Own: func(shared *stacks.TenantOutputs) pulumi.RunFunc {
		return stacks.Tenant(stacks.TenantInput{Tenant: k.x, Cluster: cl, Shared: shared, Namespace: ns})
	}, Namespace: k.x.TargetNamespace()}
	if !cl.RabbitMQOperatorReady {
		progs.Wait = t.parentErr(&ParentError{Stack: t.Parent, Reason: "the cluster's RabbitMQ operator is not ready"})
	}
	if t.Shared != "" {
		progs.Shared = stacks.Tenant(stacks.TenantInput{Tenant: k.x, Cluster: cl, Namespace: ns})
		progs.JobType = k.x.Spec.JobType
	}
	return progs, nil
}

func (k tenantPrograms) graph() (*stacks.Graph, error) { return stacks.TenantGraph(k.x) }

// immutable: the cluster, the type, the job type and the namespace the tenant lives in.
func (k tenantPrograms) immutable() map[string]string {
	return map[string]string{
		"spec.clusterRef": k.x.Spec.ClusterRef,
		"spec.type":       string(k.x.Spec.Type),
		"spec.jobType":    k.x.Spec.JobType,
		"spec.namespace":  k.x.TargetNamespace(),
	}
}

// serverPrograms: a server reads its tenant's stack.
type serverPrograms struct{ x *v1alpha1.TFRServer }

func (k serverPrograms) programs(ctx context.Context, t Target, p Parents) (*Programs, error) {
	tenant, err := p.Tenant(ctx, t.Parent)
	if err != nil {
		return nil, t.parentErr(err)
	}
	if r, ok := p.(Robots); ok && tenant.Namespace != "" {
		robot := server.Robot{Namespace: tenant.Namespace, ID: k.x.Spec.RobotID, Type: k.x.Spec.RobotType}
		exists, owner, err := r.RobotService(ctx, robot.Namespace, robot.APIName())
		if err != nil {
			return nil, fmt.Errorf("spec.robotId: reading the robot's Service %s/%s: %w", robot.Namespace, robot.APIName(), err)
		}
		if errs := RobotClaimErrors(robot, t.Stack, exists, owner); len(errs) > 0 {
			return nil, &InvalidError{Errors: errs}
		}
		if ra, ok := p.(RobotAccounts); ok {
			exists, owner, err := ra.RobotAccount(ctx, robot.Namespace, robot.ServiceAccount())
			if err != nil {
				return nil, fmt.Errorf("spec.robotId: reading the robot's ServiceAccount %s/%s: %w", robot.Namespace, robot.ServiceAccount(), err)
			}
			if errs := RobotClaimErrors(robot, t.Stack, exists, owner); len(errs) > 0 {
				return nil, &InvalidError{Errors: errs}
			}
		}
		share, err := tenant.Share()
		if err != nil {
			return nil, t.parentErr(err)
		}
		errs, err := ownerShareErrors(ctx, p, k.x, robot, share)
		if err != nil {
			return nil, err
		}
		if len(errs) > 0 {
			return nil, &InvalidError{Errors: errs}
		}
	}
	return &Programs{Own: func(*stacks.TenantOutputs) pulumi.RunFunc {
		return stacks.Server(stacks.ServerInput{Server: k.x, Tenant: tenant})
	}, Namespace: tenant.Namespace}, nil
}

func (k serverPrograms) graph() (*stacks.Graph, error) { return stacks.ServerGraph(k.x) }

// immutable: the tenant and the robot's identity (they name the routing host and the stack).
func (k serverPrograms) immutable() map[string]string {
	return map[string]string{
		"spec.tenantRef": k.x.Spec.TenantRef,
		"spec.robotId":   k.x.Spec.RobotID,
		"spec.robotType": k.x.Spec.RobotType,
	}
}
