//go:build integration

package engine

import (
	"context"
	"encoding/base64"
	"testing"
	"time"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1k "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfrs-io/tfrs-operator/stacks/program"
)

// credentialSecretProgram: a namespace and a Secret holding a generated credential, plus a
// ConfigMap whose data is data (an in-place update when it changes).
func credentialSecretProgram(kc, ns, data string) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		p, err := provider(ctx, kc)
		if err != nil {
			return err
		}
		nsRes, err := corev1.NewNamespace(ctx, "ns", &corev1.NamespaceArgs{
			Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(ns)},
		}, pulumi.Provider(p))
		if err != nil {
			return err
		}
		pw, err := program.Credential(ctx, "db-password")
		if err != nil {
			return err
		}
		if _, err := corev1.NewSecret(ctx, "secret", &corev1.SecretArgs{
			Metadata:   &metav1.ObjectMetaArgs{Name: pulumi.String("db"), Namespace: nsRes.Metadata.Name().Elem()},
			StringData: pulumi.StringMap{"password": pw},
		}, pulumi.Provider(p)); err != nil {
			return err
		}
		_, err = corev1.NewConfigMap(ctx, "cm", &corev1.ConfigMapArgs{
			Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String("settings"), Namespace: nsRes.Metadata.Name().Elem()},
			Data:     pulumi.StringMap{"key": pulumi.String(data)},
		}, pulumi.Provider(p))
		return err
	}
}

// TestSavedPlan: a plan preview of a stack that does not exist creates nothing in the
// cluster; the Up of that plan creates exactly it, with the credential the preview generated;
// a plan taken before an edit is refused by the Up (nothing changes) and a new plan applies.
func TestSavedPlan(t *testing.T) {
	kc := kubeconfig(t)
	cp := controlPlane(t)
	e := newEngine(t, Options{})
	ctx := tctx(t, 5*time.Minute)
	const stack = "tenant.plan-test.acme"
	ns := "plan-test"
	req := Request{Stack: stack, Program: credentialSecretProgram(kc, ns, "v1"), ManagedBy: ManagedByCLI, SavePlan: true,
		PlanMeta: map[string]string{"generation": "1"}}

	res, err := e.Preview(ctx, req)
	require.NoError(t, err)
	require.NotNil(t, res.Plan)
	p1 := res.Plan
	assert.True(t, ValidPlanID(p1.ID), p1.ID)
	assert.Equal(t, 6, res.Changes[StepCreate], "stack, provider, namespace, credential, secret, configmap: %+v", res.Changes)
	require.Contains(t, p1.Credentials, "db-password", "the generated credential travels with the plan")
	enc, err := p1.Encode()
	require.NoError(t, err)
	// No plaintext: the sealed credential is not in the encoded plan.
	creds, err := e.openCredentials(p1)
	require.NoError(t, err)
	password := creds["db-password"]
	require.Len(t, password, 32)
	assert.NotContains(t, string(enc), password)
	assert.NotContains(t, string(enc), base64.StdEncoding.EncodeToString([]byte(password)))

	// Nothing in the cluster yet, but the stack record exists (the plan is its ciphertext).
	cs, err := cp.Client()
	require.NoError(t, err)
	_, err = cs.CoreV1().Namespaces().Get(ctx, ns, metav1k.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the preview created nothing: %v", err)
	tags, err := e.Tags(ctx, stack)
	require.NoError(t, err)
	assert.Equal(t, string(ManagedByCLI), tags[TagManagedBy])

	// Stored and read back through the backend, content-checked.
	require.NoError(t, e.StorePlan(ctx, p1))
	back, err := e.LoadPlan(ctx, stack, p1.ID)
	require.NoError(t, err)
	assert.Equal(t, p1.ID, back.ID)
	_, err = e.LoadPlan(ctx, stack, "0123456789abcdef")
	assert.ErrorIs(t, err, ErrPlanNotFound)
	tampered := *back
	tampered.Meta = map[string]string{"generation": "2"}
	b, _ := tampered.Encode()
	_, err = DecodePlan(b)
	assert.ErrorContains(t, err, "does not match its id")

	// The Up applies exactly the plan, with the previewed credential.
	up := Request{Stack: stack, Program: credentialSecretProgram(kc, ns, "v1"), ManagedBy: ManagedByCLI, Plan: back}
	_, err = e.Up(ctx, up)
	require.NoError(t, err)
	sec, err := cs.CoreV1().Secrets(ns).Get(ctx, "db", metav1k.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, password, string(sec.Data["password"]))

	// A plan for "v2", then an edit to "v3" before the apply: refused, nothing changes.
	res, err = e.Preview(ctx, Request{Stack: stack, Program: credentialSecretProgram(kc, ns, "v2"), SavePlan: true})
	require.NoError(t, err)
	p2 := res.Plan
	assert.Empty(t, p2.Credentials, "no new credential: the state has it")
	assert.Equal(t, 1, res.Changes[StepReplace], "a ConfigMap's data change replaces it: %+v", res.Changes)
	_, err = e.Up(ctx, Request{Stack: stack, Program: credentialSecretProgram(kc, ns, "v3"), Plan: p2})
	require.ErrorIs(t, err, ErrPlanMismatch)
	t.Logf("mismatch: %v", err)
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1k.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "v1", cm.Data["key"], "the refused up changed nothing")

	// The plan of what is asked now applies.
	_, err = e.Up(ctx, Request{Stack: stack, Program: credentialSecretProgram(kc, ns, "v2"), Plan: p2})
	require.NoError(t, err)
	cm, err = cs.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1k.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "v2", cm.Data["key"])

	// A plan of another stack is refused before anything runs.
	_, err = e.Up(ctx, Request{Stack: "tenant.plan-test.other", Program: emptyProgram, Plan: p2})
	assert.ErrorContains(t, err, "can only be applied by an up of that stack")

	// Discard keeps only what it is told to.
	require.NoError(t, e.StorePlan(ctx, p2))
	require.NoError(t, e.DiscardPlans(ctx, stack, p2.ID))
	_, err = e.LoadPlan(ctx, stack, p1.ID)
	assert.ErrorIs(t, err, ErrPlanNotFound)
	_, err = e.LoadPlan(ctx, stack, p2.ID)
	assert.NoError(t, err)

	_, err = e.Destroy(context.Background(), Request{Stack: stack})
	require.NoError(t, err)
}
