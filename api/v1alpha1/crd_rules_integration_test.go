//go:build integration

/*
Copyright 2026 The TFRS Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package v1alpha1

import (
	"reflect"
	"testing"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Against the real API server: a personal tenant as the API server stores it (every default
// written out) passes Validate, one that sets middleware is stored (no schema rule can tell a
// default from a value) but refused by Validate, and the cluster's personal middleware is
// checked by the schema at its own paths and defaulted like Default.
func TestCRDPersonalMiddleware(t *testing.T) {
	c := apiServer(t)
	ctx := t.Context()
	stored := personalTenant()
	if err := c.Create(ctx, stored); err != nil {
		t.Fatalf("create personal tenant: %v", err)
	}
	defer deleteNow(ctx, t, c, stored)
	if stored.Spec.Redis.Image != DefaultRedisImage {
		t.Fatalf("API server did not default spec.redis: %+v", stored.Spec.Redis)
	}
	if errs := stored.Validate(); len(errs) > 0 {
		t.Errorf("the stored personal tenant is refused: %v", errs)
	}

	bad := newCluster(func(c *TFRCluster) {
		c.Name = "personal-bad"
		c.Spec.Personal.JobTypes = map[string]TenantMiddleware{"chat": {MinIO: MinIOSpec{Servers: ptr.To[int32](99)}}}
	})
	assertRejected(t, c.Create(ctx, bad), errorFields(bad.Validate()))

	good := newCluster(func(c *TFRCluster) {
		c.Name = "personal-good"
		c.Spec.Personal.JobTypes = map[string]TenantMiddleware{"chat": {Redis: RedisSpec{Size: qty("3Gi")}}}
	})
	if err := c.Create(ctx, good); err != nil {
		t.Fatalf("create cluster: %v", err)
	}
	defer deleteNow(ctx, t, c, good)
	var got TFRCluster
	if err := c.Get(ctx, client.ObjectKeyFromObject(good), &got); err != nil {
		t.Fatal(err)
	}
	want := newCluster(func(c *TFRCluster) {
		c.Spec.Personal.JobTypes = map[string]TenantMiddleware{"chat": {Redis: RedisSpec{Size: qty("3Gi")}}}
	})
	want.Default()
	if g, w := toJSONMap(t, &got)["spec"], toJSONMap(t, want)["spec"]; !reflect.DeepEqual(g, w) {
		t.Errorf("defaulted spec.personal differs\nAPI server: %v\nDefault():  %v", g, w)
	}
}

func TestCRDRobotTypeHasNoDash(t *testing.T) {
	c := apiServer(t)
	s := newServer(func(s *TFRServer) { s.Name, s.Spec.RobotType, s.Spec.RobotID = "dash-type", "chat-bot", "1" })
	assertRejected(t, c.Create(t.Context(), s), []string{"spec.robotType"})
}
