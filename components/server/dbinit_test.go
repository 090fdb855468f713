package server

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	pt "github.com/tfrs-io/tfrs-operator/internal/pulumitest"
)

// The container that runs the robot's image (migrate) can reach nothing of the tenant owner's
// login: no variable from the Job's Secret, and a view of the Secret that holds only its
// Confz. The owner's password reaches only the schema container, which runs TFRS's psql image.
func TestDBInitOwnerPasswordOnlyInTheSchemaContainer(t *testing.T) {
	m, name := runJob(t, dbInit("[postgresql]\nuser = \"r_chat_r_1\"\n", true))
	ps := pt.At(t, pt.Plain(m.Find(t, "kubernetes:batch/v1:Job", "").Inputs), "spec", "template", "spec").(map[string]any)

	// What each container can read of the Job's Secret: its secretKeyRef keys and the keys of
	// the volume it mounts (all of them when the volume has no items).
	secretFiles := []string{"admin-password", ConfzKey, "schema.sql"}
	volumes := map[string][]string{}
	for _, v := range ps["volumes"].([]any) {
		v := v.(map[string]any)
		sec := v["secret"].(map[string]any)
		pt.Eq(t, "volume secret", sec["secretName"], name)
		keys := secretFiles
		if items, ok := sec["items"].([]any); ok {
			keys = nil
			for _, it := range items {
				keys = append(keys, it.(map[string]any)["key"].(string))
			}
		}
		volumes[v["name"].(string)] = keys
	}
	sees := func(c map[string]any) []string {
		var out []string
		for _, e := range asList(c["env"]) {
			if ref, ok := e.(map[string]any)["valueFrom"]; ok {
				out = append(out, pt.At(t, ref.(map[string]any), "secretKeyRef", "key").(string))
			}
		}
		for _, vm := range asList(c["volumeMounts"]) {
			out = append(out, volumes[vm.(map[string]any)["name"].(string)]...)
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	migrate := pt.At(t, ps, "containers", 0).(map[string]any)
	schema := pt.At(t, ps, "initContainers", 0).(map[string]any)
	pt.Eq(t, "migrate image", migrate["image"], "tfrobot/server:1")
	pt.Eq(t, "the robot's image sees only its Confz", sees(migrate), []string{ConfzKey})
	pt.Eq(t, "schema image", schema["image"], DefaultPSQLImage)
	pt.Eq(t, "the psql container sees the owner's password and the script", sees(schema), []string{"admin-password", "schema.sql"})
	if s := fmt.Sprint(migrate); strings.Contains(s, "admin-password") || strings.Contains(s, "app_user") {
		t.Errorf("migrate container names the owner's login: %s", s)
	}

	// An enterprise robot's db-init has no schema container and no owner secret beyond its Confz.
	m, _ = runJob(t, dbInit("x = 1", false))
	ps = pt.At(t, pt.Plain(m.Find(t, "kubernetes:batch/v1:Job", "").Inputs), "spec", "template", "spec").(map[string]any)
	pt.Eq(t, "enterprise volumes", len(ps["volumes"].([]any)), 1)
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}
