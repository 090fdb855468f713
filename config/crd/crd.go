// Package crd embeds the generated CustomResourceDefinitions (config/crd/bases, written by
// `make manifests`) so that `tfrs dev` and tests install exactly what `kubectl apply -k
// config/default` would, from any working directory.
package crd

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

//go:embed bases/*.yaml
var bases embed.FS

// Definitions returns the CRDs.
func Definitions() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := fs.Glob(bases, "bases/*.yaml")
	if err != nil {
		return nil, err
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		b, err := bases.ReadFile(f)
		if err != nil {
			return nil, err
		}
		c := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(b, c); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// Install creates or updates the CRDs and waits until the API server serves them.
func Install(ctx context.Context, cfg *rest.Config) error {
	defs, err := Definitions()
	if err != nil {
		return err
	}
	return Apply(ctx, cfg, defs)
}

// Apply creates or updates any CRDs (TFRS's own or an upstream project's) and waits until the
// API server serves them.
func Apply(ctx context.Context, cfg *rest.Config, defs []*apiextensionsv1.CustomResourceDefinition) error {
	cs, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	api := cs.ApiextensionsV1().CustomResourceDefinitions()
	for _, d := range defs {
		cur, err := api.Get(ctx, d.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = api.Create(ctx, d, metav1.CreateOptions{})
		case err == nil:
			d.ResourceVersion = cur.ResourceVersion
			_, err = api.Update(ctx, d, metav1.UpdateOptions{})
		}
		if err != nil {
			return fmt.Errorf("install CRD %s: %w", d.Name, err)
		}
	}
	for _, d := range defs {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			cur, err := api.Get(ctx, d.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range cur.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s not established: %w", d.Name, err)
		}
	}
	return nil
}
