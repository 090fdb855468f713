package operator

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks"
	"github.com/tfrs-io/tfrs-operator/stacks/runner"
)

// The Supported condition follows an up's support findings: none on an object that never had
// a finding; False with the first finding's reason and every message; True once none is left.
func TestSupportCondition(t *testing.T) {
	var st v1alpha1.StackStatus
	_, changed := supportCondition(&st, 1, &runner.Outcome{})
	assert.False(t, changed)
	assert.Nil(t, meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionSupported), "no finding ever: no condition")

	out := &runner.Outcome{Support: []stacks.SupportFinding{
		{Project: "cert-manager", Reason: stacks.SupportKubeTooNew, Message: "cert-manager v1.21.2 supports Kubernetes 1.33 to 1.36"},
		{Project: "cnpg", Reason: stacks.SupportEndOfLifeSoon, Message: "cnpg 1.30.0 reaches its end of support"},
	}}
	c, changed := supportCondition(&st, 2, out)
	require.True(t, changed)
	assert.Equal(t, metav1.ConditionFalse, c.Status)
	assert.Equal(t, stacks.SupportKubeTooNew, c.Reason)
	assert.Contains(t, c.Message, "cert-manager v1.21.2")
	assert.Contains(t, c.Message, "cnpg 1.30.0")
	_, changed = supportCondition(&st, 2, out)
	assert.False(t, changed, "the same findings again: no new event")

	c, changed = supportCondition(&st, 3, &runner.Outcome{})
	require.True(t, changed)
	assert.Equal(t, metav1.ConditionTrue, c.Status)
	assert.Equal(t, v1alpha1.ReasonWithinSupport, c.Reason)
}
