package stacks

import (
	"testing"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/components/server"
)

// Robots of different owners never share writable storage: each personal robot's workers
// mount only its own directory of the job type's shared cache, at the cache dir the robot is
// told about (TFS_ROBOT__DOC_EXTRACTED_IMAGES_DIR); an enterprise robot mounts the whole
// volume of its one tenant.
func TestPersonalRobotCacheSubPath(t *testing.T) {
	to := personalTenant(t)
	seen := map[string]string{}
	for _, id := range []string{"r-1", "r-2"} {
		s := newServer(func(s *v1alpha1.TFRServerSpec) { s.RobotID = id })
		s.Name = id
		r := runServer(t, ServerInput{Server: s, Tenant: to})
		rb := server.Robot{Namespace: to.Namespace, ID: id, Type: "chat", DataOwner: "tenant.tfrs-system.acme"}
		want := "robots/" + rb.DataName()
		check(t, id+" sub path", PersonalCacheSubPath(rb), want)
		for _, dep := range []string{ServerAPIWorker + "-deployment", ServerRobotWorker + "-deployment"} {
			c := podSpec(t, r, "kubernetes:apps/v1:Deployment", dep)["containers"].([]any)[0].(map[string]any)
			var mount map[string]any
			for _, m := range c["volumeMounts"].([]any) {
				if m := m.(map[string]any); m["name"] == "shared-cache" {
					mount = m
				}
			}
			check(t, id+" "+dep+" mount", mount, map[string]any{"name": "shared-cache", "mountPath": to.SharedCacheDir, "subPath": want})
			check(t, id+" "+dep+" cache env", envOf(c)[server.ExtractedImagesDirEnv], to.SharedCacheDir)
		}
		if other, dup := seen[want]; dup {
			t.Errorf("robots %s and %s share %s", id, other, want)
		}
		seen[want] = id
	}
	r := runServer(t, ServerInput{Server: newServer(nil), Tenant: enterpriseTenant(t)})
	c := podSpec(t, r, "kubernetes:apps/v1:Deployment", ServerRobotWorker+"-deployment")["containers"].([]any)[0].(map[string]any)
	for _, m := range c["volumeMounts"].([]any) {
		if m := m.(map[string]any); m["name"] == "shared-cache" && m["subPath"] != nil {
			t.Errorf("enterprise robot mounts a sub path: %v", m)
		}
	}
}
