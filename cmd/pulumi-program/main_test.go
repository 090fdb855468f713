package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/internal/pulumitest"
	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/kinds"
)

// entryMocks record registrations and answer stack references with the outputs of parent
// stacks, as the backend would (secrets marked secret).
type entryMocks struct {
	pulumitest.Mocks
	parents map[string]resource.PropertyMap // stack -> outputs

	mu   sync.Mutex
	refs []string
}

func (m *entryMocks) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	if args.TypeToken == "pulumi:pulumi:StackReference" {
		name := args.Inputs["name"].StringValue()
		m.mu.Lock()
		m.refs = append(m.refs, name)
		m.mu.Unlock()
		return name, resource.PropertyMap{"name": resource.NewProperty(name), "outputs": resource.NewProperty(m.parents[name])}, nil
	}
	return m.Mocks.NewResource(args)
}

func clusterOutputs() resource.PropertyMap {
	return resource.PropertyMap{
		resource.PropertyKey(stacks.ClusterOutputPullSecretName):        resource.NewProperty(""),
		resource.PropertyKey(stacks.ClusterOutputDockerConfigJSON):      resource.MakeSecret(resource.NewProperty("")),
		resource.PropertyKey(stacks.ClusterOutputImageRegistry):         resource.NewProperty("mirror.example.com"),
		resource.PropertyKey(stacks.ClusterOutputRabbitMQOperatorReady): resource.NewProperty(true),
	}
}

// sharedOutputs are the outputs of the personal job type "chat"'s shared stack.
func sharedOutputs() resource.PropertyMap {
	out := resource.PropertyMap{}
	for k, secret := range stacks.TenantOutputKeys() {
		v := resource.NewProperty("x-" + k)
		switch {
		case strings.HasSuffix(k, "Port"):
			v = resource.NewProperty(5432.0)
		case k == stacks.TenantOutputTenantType:
			v = resource.NewProperty("personal")
		case k == stacks.TenantOutputJobType:
			v = resource.NewProperty("chat")
		case k == stacks.TenantOutputNamespace:
			v = resource.NewProperty("personal-chat")
		}
		if secret {
			v = resource.MakeSecret(v)
		}
		out[resource.PropertyKey(k)] = v
	}
	return out
}

const (
	clusterDoc = `apiVersion: tfrs.io/v1alpha1
kind: TFRCluster
metadata: {name: dev}
spec: {domain: tfrobot.local, ingress: {mode: NodePort}}
`
	tenantDoc = `apiVersion: tfrs.io/v1alpha1
kind: TFRTenant
metadata: {name: acme, namespace: tfrs-system}
spec: {clusterRef: dev, type: enterprise, namespace: acme}
`
	personalDoc = `apiVersion: tfrs.io/v1alpha1
kind: TFRTenant
metadata: {name: alice, namespace: tfrs-system}
spec: {clusterRef: dev, type: personal, jobType: chat}
`
)

// runEntry runs the entry as the stock CLI would on stack, with doc as tfrs:object.
func runEntry(t *testing.T, stack, doc string, dryRun bool) (*entryMocks, error) {
	t.Helper()
	cfg, err := json.Marshal(map[string]string{kinds.ConfigObject: doc})
	require.NoError(t, err)
	t.Setenv(pulumi.EnvConfig, string(cfg))
	t.Setenv(pulumi.EnvDryRun, map[bool]string{true: "true", false: "false"}[dryRun])
	m := &entryMocks{Mocks: pulumitest.Mocks{Stack: stack}, parents: map[string]resource.PropertyMap{
		"cluster.dev":                  clusterOutputs(),
		"tenant.personal-chat._shared": sharedOutputs(),
	}}
	err = pulumi.RunErr(run, pulumi.WithMocks("tfrs", stack, m))
	return m, err
}

func TestEntryDispatchesByKindAndStack(t *testing.T) {
	m, err := runEntry(t, "cluster.dev", clusterDoc, true)
	require.NoError(t, err)
	m.Find(t, "tfrs:cluster:Istio", "istio")
	require.Empty(t, m.refs, "a cluster has no parent")

	m, err = runEntry(t, "tenant.tfrs-system.acme", tenantDoc, true)
	require.NoError(t, err)
	require.Equal(t, []string{"cluster.dev"}, m.refs, "the tenant reads its cluster through a stack reference")
	m.Find(t, "tfrs:tenant:PostgreSQL", "postgresql")
	dep := m.Find(t, "kubernetes:apps/v1:Deployment", "prometheus-deployment")
	image := pulumitest.At(t, pulumitest.Plain(dep.Inputs), "spec", "template", "spec", "containers", 0, "image")
	require.Contains(t, image, "mirror.example.com/", "the cluster's outputs reach the program")
}

func TestEntryPersonalTenantStacks(t *testing.T) {
	// On the job type's shared stack the tenant registers the shared middleware.
	m, err := runEntry(t, "tenant.personal-chat._shared", personalDoc, true)
	require.NoError(t, err)
	m.Find(t, "tfrs:tenant:Namespace", "namespace")
	require.Equal(t, []string{"cluster.dev"}, m.refs)

	// On its own stack it registers nothing and re-exports the shared stack's outputs.
	m, err = runEntry(t, "tenant.tfrs-system.alice", personalDoc, true)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"cluster.dev", "tenant.personal-chat._shared"}, m.refs)
	for _, r := range m.Regs() {
		require.False(t, strings.HasPrefix(r.Type, "kubernetes:") || strings.HasPrefix(r.Type, "tfrs:tenant:"),
			"a member stack registers nothing of its own, got %s %s", r.Type, r.Name)
	}
}

func TestEntryRefusals(t *testing.T) {
	_, err := runEntry(t, "tenant.tfrs-system.other", tenantDoc, true)
	require.ErrorContains(t, err, "does not belong to TFRTenant tfrs-system/acme")

	_, err = runEntry(t, "cluster.dev", "", true)
	require.ErrorIs(t, err, kinds.ErrNoObject)

	_, err = runEntry(t, "cluster.dev", clusterDoc+"---\n"+tenantDoc, true)
	require.ErrorContains(t, err, "exactly one")

	_, err = runEntry(t, "cluster.dev", strings.Replace(clusterDoc, "tfrobot.local", "Not A Domain", 1), true)
	require.ErrorIs(t, err, kinds.ErrInvalid)

	m, err := runEntry(t, "cluster.dev", clusterDoc, false)
	require.ErrorIs(t, err, errApply, "an update from the stock CLI would rotate generated credentials")
	require.Empty(t, m.Regs(), "nothing is registered before the refusal")

	// A parent stack that has no outputs (never brought up) is a parent error.
	m2 := &entryMocks{Mocks: pulumitest.Mocks{Stack: "tenant.tfrs-system.acme"}, parents: map[string]resource.PropertyMap{}}
	cfg, _ := json.Marshal(map[string]string{kinds.ConfigObject: tenantDoc})
	t.Setenv(pulumi.EnvConfig, string(cfg))
	t.Setenv(pulumi.EnvDryRun, "true")
	err = pulumi.RunErr(run, pulumi.WithMocks("tfrs", "tenant.tfrs-system.acme", m2))
	require.ErrorIs(t, err, kinds.ErrParentNotReady)
}

// The project file parses, declares project tfrs with the Go runtime, and points main at this
// package.
func TestPulumiYAML(t *testing.T) {
	p, err := workspace.LoadProject(filepath.Join("..", "..", "Pulumi.yaml"))
	require.NoError(t, err)
	require.Equal(t, "tfrs", string(p.Name))
	require.Equal(t, "go", p.Runtime.Name())
	require.Equal(t, "./cmd/pulumi-program", p.Main)
	require.Contains(t, p.Config, kinds.ConfigObject)
}
