package kinds

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
)

// SetSourceField reaches every source field an object lists, personal job types' map keys
// included: each set value is what Sources reports at that path afterwards, and nothing else
// moves.
func TestSetSourceFieldReachesEverySource(t *testing.T) {
	c := &v1alpha1.TFRCluster{ObjectMeta: metav1.ObjectMeta{Name: "c"}}
	c.Spec.CertManager.LocalPath = "/charts/cert-manager"
	c.Spec.Personal.Middleware.Grafana.ChartRepo = "https://charts.example.com"
	c.Spec.Personal.JobTypes = map[string]v1alpha1.TenantMiddleware{"chat": {}, "vision-2": {}}
	for jt, m := range c.Spec.Personal.JobTypes {
		m.Jaeger.LocalPath = "/charts/" + jt + "/jaeger"
		c.Spec.Personal.JobTypes[jt] = m
	}
	tt := &v1alpha1.TFRTenant{ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: "n"}}
	tt.Spec.Grafana.LocalPath = "/charts/grafana"
	for _, obj := range []v1alpha1.Object{c, tt} {
		before := obj.Sources()
		require.NotEmpty(t, before)
		for _, s := range before {
			require.NoError(t, SetSourceField(obj, s.Path, "new:"+s.Path.String()), s.Path.String())
		}
		after := map[string]string{}
		for _, s := range obj.Sources() {
			after[s.Path.String()] = s.Value
		}
		require.Len(t, after, len(before))
		for _, s := range before {
			assert.Equal(t, "new:"+s.Path.String(), after[s.Path.String()])
		}
	}
	assert.Contains(t, c.Spec.Personal.JobTypes["vision-2"].Jaeger.LocalPath, "spec.personal.jobTypes[vision-2].jaeger.localPath")
}

func TestPathSteps(t *testing.T) {
	steps, err := pathSteps("spec.personal.jobTypes[chat].grafana.localPath")
	require.NoError(t, err)
	assert.Equal(t, []pathStep{{name: "spec"}, {name: "personal"}, {name: "jobTypes"}, {name: "chat", index: true}, {name: "grafana"}, {name: "localPath"}}, steps)
	steps, err = pathSteps("spec.items[2].x")
	require.NoError(t, err)
	assert.Equal(t, []pathStep{{name: "spec"}, {name: "items"}, {name: "2", index: true}, {name: "x"}}, steps)
	for _, bad := range []string{"", "spec.[", "spec..x", "a[b"} {
		_, err := pathSteps(bad)
		assert.Error(t, err, bad)
	}
}
