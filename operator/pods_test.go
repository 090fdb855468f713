package operator

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestLeaseHeldBy(t *testing.T) {
	now := time.Now()
	lease := func(holder string, renewed time.Time, secs int32) coordinationv1.Lease {
		return coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder),
			RenewTime: &metav1.MicroTime{Time: renewed}, LeaseDurationSeconds: ptr.To(secs)}}
	}
	me := "tfrs-5d8_0f1e"
	assert.True(t, leaseHeldBy(lease(me, now.Add(-5*time.Second), 15), me, now))
	assert.False(t, leaseHeldBy(lease(me, now.Add(-20*time.Second), 15), me, now), "expired")
	assert.False(t, leaseHeldBy(lease("tfrs-5d8_77aa", now, 15), me, now), "another replica on the same host")
	assert.False(t, leaseHeldBy(coordinationv1.Lease{}, me, now), "empty Lease")
	assert.False(t, leaseHeldBy(lease("", now, 15), "", now), "no identity")
}
