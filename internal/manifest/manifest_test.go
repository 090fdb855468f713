package manifest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
)

func TestDecodeMultiDocument(t *testing.T) {
	objs, err := Decode(strings.NewReader(`# leading comment
---
apiVersion: tfrs.io/v1alpha1
kind: TFRCluster
metadata: {name: dev}
spec: {domain: example.com}
---
# only a comment
---
apiVersion: tfrs.io/v1alpha1
kind: TFRServer
metadata: {name: bot, namespace: ns}
spec: {tenantRef: t, robotId: bot, robotType: chat, image: img:1}
`))
	require.NoError(t, err)
	require.Len(t, objs, 2)
	require.Equal(t, "example.com", objs[0].(*v1alpha1.TFRCluster).Spec.Domain)
	require.Equal(t, "bot", objs[1].(*v1alpha1.TFRServer).Spec.RobotID)
}

func TestDecodeRejectsUnknownFieldsAndKinds(t *testing.T) {
	_, err := Decode(strings.NewReader("apiVersion: tfrs.io/v1alpha1\nkind: TFRCluster\nmetadata: {name: dev}\nspec: {domian: x}\n"))
	require.ErrorContains(t, err, "domian")
	require.ErrorContains(t, err, "document 1")

	_, err = Decode(strings.NewReader("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"))
	require.ErrorContains(t, err, "document 1")
}

// A Kubernetes object of another kind is named as not a TFRS resource, with its position;
// a TFRS kind at an unserved version is told the served one.
func TestDecodeNamesForeignKinds(t *testing.T) {
	_, err := Decode(strings.NewReader(`apiVersion: tfrs.io/v1alpha1
kind: TFRCluster
metadata: {name: dev}
spec: {domain: example.com}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec: {}
`))
	require.ErrorIs(t, err, ErrNotTFRS)
	require.EqualError(t, err, `document 2: Deployment "web" (apps/v1) is not a TFRS resource (TFRCluster/TFRTenant/TFRServer)`)

	_, err = Decode(strings.NewReader("apiVersion: example.io/v1\nkind: TFRCluster\nmetadata: {name: x}\n"))
	require.ErrorIs(t, err, ErrNotTFRS, "the kind's name in another group is not ours")

	_, err = Decode(strings.NewReader("apiVersion: tfrs.io/v1\nkind: TFRTenant\nmetadata: {name: x}\n"))
	require.EqualError(t, err, `document 1: TFRTenant "x": apiVersion tfrs.io/v1 is not served; use tfrs.io/v1alpha1`)
}
