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
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/tfrs-io/tfrs-operator/internal/tools"
)

// The integration tests run the generated CRDs in a real kube-apiserver (envtest, binaries from
// the tools cache: `make tools`) and check that it accepts and rejects exactly what Validate
// does, on the same field paths, and that it defaults exactly like Default.

var (
	envOnce   sync.Once
	testEnv   *envtest.Environment
	envClient client.Client
	envErr    error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if testEnv != nil {
		if err := testEnv.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stop envtest: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	os.Exit(code)
}

// apiServer starts one control plane for the package (stopped in TestMain). Missing binaries
// fail the test with the tools error: they are built by `make tools`, never downloaded.
func apiServer(t *testing.T) client.Client {
	t.Helper()
	envOnce.Do(func() {
		apiserver, err := tools.Bin("kube-apiserver")
		if err != nil {
			envErr = err
			return
		}
		etcd, err := tools.Bin("etcd")
		if err != nil {
			envErr = err
			return
		}
		env := &envtest.Environment{
			BinaryAssetsDirectory:    tools.Dir(),
			CRDDirectoryPaths:        []string{crdDir},
			ErrorIfCRDPathMissing:    true,
			ControlPlaneStartTimeout: 2 * time.Minute,
			ControlPlaneStopTimeout:  30 * time.Second,
		}
		env.ControlPlane.GetAPIServer().Path = apiserver
		env.ControlPlane.Etcd = &envtest.Etcd{Path: etcd}
		testEnv = env // stopped by TestMain even when Start fails half-way
		cfg, err := env.Start()
		if err != nil {
			envErr = fmt.Errorf("start envtest: %w", err)
			return
		}
		scheme := runtime.NewScheme()
		if err := AddToScheme(scheme); err != nil {
			envErr = err
			return
		}
		envClient, envErr = client.New(cfg, client.Options{Scheme: scheme})
	})
	if envErr != nil {
		t.Fatal(envErr)
	}
	return envClient
}

// nameRuleMessage starts the message of the metadata.name CEL rule of every kind.
const nameRuleMessage = "metadata.name must be a DNS-1123 label"

// causeFields are the field paths of an Invalid error's causes.
func causeFields(err error) []string {
	var st apierrors.APIStatus
	if !errors.As(err, &st) || st.Status().Details == nil {
		return nil
	}
	var out []string
	for _, c := range st.Status().Details.Causes {
		if strings.Contains(c.Message, "some validation rules were not checked") {
			continue // a note that CEL was skipped after a schema error, not an error of its own
		}
		f := c.Field
		if (f == "" || f == "<nil>") && strings.Contains(c.Message, nameRuleMessage) {
			// A root CEL rule cannot name metadata.name as its fieldPath (the schema does not
			// describe metadata), so the API server reports it on the object; its message names it.
			f = "metadata.name"
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}

func assertRejected(t *testing.T, err error, fields []string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("API server: got %v, want an Invalid error on %v", err, fields)
	}
	want := slices.Clone(fields)
	sort.Strings(want)
	if got := causeFields(err); !slices.Equal(got, want) {
		t.Errorf("API server rejected fields %v, Validate names %v\n%v", got, want, err)
	}
	for _, f := range fields {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("API server error does not name %s: %v", f, err)
		}
	}
}

func deleteNow(ctx context.Context, t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("delete: %v", err)
	}
}

func TestCRDAgreesWithValidate(t *testing.T) {
	c := apiServer(t)
	ctx := t.Context()
	for _, tc := range validationCases() {
		t.Run(tc.name, func(t *testing.T) {
			obj := tc.obj.DeepCopyObject().(defaulted)
			err := c.Create(ctx, obj)
			if len(tc.fields) > 0 && !tc.goOnly {
				assertRejected(t, err, tc.fields)
				return
			}
			if err != nil {
				t.Fatalf("API server rejected an object Validate accepts: %v", err)
			}
			defer deleteNow(ctx, t, c, obj)

			// The API server's defaults are Default()'s.
			local := tc.obj.DeepCopyObject().(defaulted)
			local.Default()
			got, want := toJSONMap(t, obj)["spec"], toJSONMap(t, local)["spec"]
			if !reflect.DeepEqual(got, want) {
				t.Errorf("defaulted spec differs\nAPI server: %v\nDefault():  %v", got, want)
			}
		})
	}
}

func TestCRDTransitionRulesAgreeWithValidateUpdate(t *testing.T) {
	c := apiServer(t)
	ctx := t.Context()
	for _, tc := range updateCases() {
		t.Run(tc.name, func(t *testing.T) {
			old := tc.old.DeepCopyObject().(client.Object)
			if err := c.Create(ctx, old); err != nil {
				t.Fatalf("create: %v", err)
			}
			defer deleteNow(ctx, t, c, old)
			updated := tc.updated.DeepCopyObject().(client.Object)
			updated.SetResourceVersion(old.GetResourceVersion())
			err := c.Update(ctx, updated)
			if len(tc.fields) > 0 {
				assertRejected(t, err, tc.fields)
			} else if err != nil {
				t.Fatalf("API server rejected an update ValidateUpdate accepts: %v", err)
			}
		})
	}
}
