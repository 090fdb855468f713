package runner

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
)

// The gate's one rule, as every door applies it: OnDataLoss plans only once a stack holds
// something, Manual always, Auto never.
func TestNeedsPlan(t *testing.T) {
	for _, c := range []struct {
		mode   v1alpha1.ApprovalMode
		upDone bool
		want   bool
	}{
		{v1alpha1.ApprovalAuto, false, false},
		{v1alpha1.ApprovalAuto, true, false},
		{v1alpha1.ApprovalManual, false, true},
		{v1alpha1.ApprovalManual, true, true},
		{v1alpha1.ApprovalOnDataLoss, false, false},
		{v1alpha1.ApprovalOnDataLoss, true, true},
		{"", true, true}, // the default is OnDataLoss
	} {
		assert.Equal(t, c.want, NeedsPlan(c.mode, c.upDone), "%q, up done %v", c.mode, c.upDone)
	}
}
