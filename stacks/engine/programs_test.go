package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	appsv1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apps/v1"
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/tfrs-io/tfrs-operator/stacks/program"
)

// Test programs. They live outside the engine, like the real ones in stacks/.

const testLabel = "tfrs-test"

// emptyProgram has no resources.
func emptyProgram(*pulumi.Context) error { return nil }

// outputsProgram has no cloud resources: plain and secret outputs plus a credential.
func outputsProgram(plain string) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		ctx.Export("plain", pulumi.String(plain))
		ctx.Export("token", pulumi.ToSecret(pulumi.String("static-secret-token-value")))
		pw, err := program.Credential(ctx, "admin")
		if err != nil {
			return err
		}
		ctx.Export("adminPassword", pw)
		return nil
	}
}

// holdProgram takes the lock (the program runs inside `up`), signals it, and waits for release.
func holdProgram(holdFile, releaseFile string) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		if err := os.WriteFile(holdFile, []byte("held"), 0o600); err != nil {
			return err
		}
		deadline := time.Now().Add(90 * time.Second)
		for time.Now().Before(deadline) {
			if _, err := os.Stat(releaseFile); err == nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		ctx.Export("held", pulumi.String("yes"))
		return nil
	}
}

func provider(ctx *pulumi.Context, kc string) (*kubernetes.Provider, error) {
	return kubernetes.NewProvider(ctx, "k8s", &kubernetes.ProviderArgs{Kubeconfig: pulumi.String(kc)})
}

func labels(ns string) pulumi.StringMap { return pulumi.StringMap{testLabel: pulumi.String(ns)} }

// configMapsProgram: a namespace and n auto-named ConfigMaps holding data.
func configMapsProgram(kc, ns string, n int, data string) pulumi.RunFunc {
	return configMapsProgramV(kc, ns, n, data, "v1")
}

// configMapsProgramV also sets a version annotation (changing it is an in-place update;
// changing data replaces an auto-named ConfigMap).
func configMapsProgramV(kc, ns string, n int, data, version string) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		p, err := provider(ctx, kc)
		if err != nil {
			return err
		}
		nsRes, err := corev1.NewNamespace(ctx, "ns", &corev1.NamespaceArgs{
			Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(ns)},
		}, pulumi.Provider(p))
		if err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			_, err := corev1.NewConfigMap(ctx, fmt.Sprintf("cm-%d", i), &corev1.ConfigMapArgs{
				Metadata: &metav1.ObjectMetaArgs{Namespace: nsRes.Metadata.Name().Elem(), Labels: labels(ns),
					Annotations: pulumi.StringMap{"tfrs.io/version": pulumi.String(version)}},
				Data: pulumi.StringMap{"key": pulumi.String(data)},
			}, pulumi.Provider(p))
			if err != nil {
				return err
			}
		}
		ctx.Export("namespace", nsRes.Metadata.Name())
		return nil
	}
}

// appProgram: namespace, n ConfigMaps, a Deployment and a Service (both awaited until ready,
// which gives kill points with a create in flight), and a Secret holding a generated
// credential. Everything but the namespace is auto-named: a lost pending create would show up
// as a duplicate.
func appProgram(kc, ns string, n int) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		p, err := provider(ctx, kc)
		if err != nil {
			return err
		}
		nsRes, err := corev1.NewNamespace(ctx, "ns", &corev1.NamespaceArgs{
			Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(ns)},
		}, pulumi.Provider(p))
		if err != nil {
			return err
		}
		nsName := nsRes.Metadata.Name().Elem()
		for i := 0; i < n; i++ {
			if _, err := corev1.NewConfigMap(ctx, fmt.Sprintf("cm-%d", i), &corev1.ConfigMapArgs{
				Metadata: &metav1.ObjectMetaArgs{Namespace: nsName, Labels: labels(ns)},
				Data:     pulumi.StringMap{"i": pulumi.Sprintf("%d", i)},
			}, pulumi.Provider(p)); err != nil {
				return err
			}
		}
		pw, err := program.Credential(ctx, "app-password")
		if err != nil {
			return err
		}
		if _, err := corev1.NewSecret(ctx, "app", &corev1.SecretArgs{
			Metadata:   &metav1.ObjectMetaArgs{Namespace: nsName, Labels: labels(ns)},
			StringData: pulumi.StringMap{"password": pw},
		}, pulumi.Provider(p)); err != nil {
			return err
		}
		app := pulumi.StringMap{"app": pulumi.String("web"), testLabel: pulumi.String(ns)}
		if _, err := appsv1.NewDeployment(ctx, "web", &appsv1.DeploymentArgs{
			Metadata: &metav1.ObjectMetaArgs{Namespace: nsName, Labels: labels(ns)},
			Spec: &appsv1.DeploymentSpecArgs{
				Replicas: pulumi.Int(1),
				Selector: &metav1.LabelSelectorArgs{MatchLabels: app},
				Template: &corev1.PodTemplateSpecArgs{
					Metadata: &metav1.ObjectMetaArgs{Labels: app},
					Spec: &corev1.PodSpecArgs{Containers: corev1.ContainerArray{&corev1.ContainerArgs{
						Name: pulumi.String("web"), Image: pulumi.String("registry.invalid/web:1"),
						Ports: corev1.ContainerPortArray{&corev1.ContainerPortArgs{ContainerPort: pulumi.Int(8080)}},
					}}},
				},
			},
		}, pulumi.Provider(p)); err != nil {
			return err
		}
		if _, err := corev1.NewService(ctx, "web", &corev1.ServiceArgs{
			Metadata: &metav1.ObjectMetaArgs{Namespace: nsName, Labels: labels(ns)},
			Spec: &corev1.ServiceSpecArgs{
				Selector: app,
				Ports:    corev1.ServicePortArray{&corev1.ServicePortArgs{Port: pulumi.Int(80), TargetPort: pulumi.Int(8080)}},
			},
		}, pulumi.Provider(p)); err != nil {
			return err
		}
		ctx.Export("namespace", nsName)
		return nil
	}
}

// pvcProgram: a namespace, a ConfigMap and a PVC (the PVC skips the await: nothing binds it).
func pvcProgram(kc, ns string) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		p, err := provider(ctx, kc)
		if err != nil {
			return err
		}
		nsRes, err := corev1.NewNamespace(ctx, "ns", &corev1.NamespaceArgs{
			Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(ns)},
		}, pulumi.Provider(p))
		if err != nil {
			return err
		}
		nsName := nsRes.Metadata.Name().Elem()
		if _, err := corev1.NewConfigMap(ctx, "settings", &corev1.ConfigMapArgs{
			Metadata: &metav1.ObjectMetaArgs{Namespace: nsName, Labels: labels(ns)},
			Data:     pulumi.StringMap{"k": pulumi.String("v")},
		}, pulumi.Provider(p)); err != nil {
			return err
		}
		_, err = corev1.NewPersistentVolumeClaim(ctx, "data", &corev1.PersistentVolumeClaimArgs{
			Metadata: &metav1.ObjectMetaArgs{
				Name: pulumi.String("data"), Namespace: nsName, Labels: labels(ns),
				Annotations: pulumi.StringMap{"pulumi.com/skipAwait": pulumi.String("true")},
			},
			Spec: &corev1.PersistentVolumeClaimSpecArgs{
				AccessModes: pulumi.StringArray{pulumi.String("ReadWriteOnce")},
				Resources: &corev1.VolumeResourceRequirementsArgs{
					Requests: pulumi.StringMap{"storage": pulumi.String("1Gi")},
				},
			},
		}, pulumi.Provider(p))
		return err
	}
}

// childSpec tells a re-executed test binary what to run (see TestMain).
type childSpec struct {
	Mode        string            `json:"mode"` // up, list, outputs
	Stack       string            `json:"stack"`
	StateDir    string            `json:"stateDir"`
	BackendURL  string            `json:"backendURL"`
	Env         map[string]string `json:"env"`
	Program     string            `json:"program"` // app, hold, outputs
	Kubeconfig  string            `json:"kubeconfig"`
	Namespace   string            `json:"namespace"`
	N           int               `json:"n"`
	HoldFile    string            `json:"holdFile"`
	ReleaseFile string            `json:"releaseFile"`
}

func (s childSpec) program() pulumi.RunFunc {
	switch s.Program {
	case "app":
		return appProgram(s.Kubeconfig, s.Namespace, s.N)
	case "hold":
		return holdProgram(s.HoldFile, s.ReleaseFile)
	default:
		return outputsProgram("from-child")
	}
}

// runChild is the child process: one engine, one operation, events as JSON lines on stdout,
// then "RESULT ok" or "RESULT <error>".
func runChild(raw string) int {
	var s childSpec
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		fmt.Println("RESULT bad spec:", err)
		return 2
	}
	ctx := context.Background()
	e, err := New(ctx, Options{StateDir: s.StateDir, BackendURL: s.BackendURL, Env: s.Env, Passphrase: testPassphrase})
	if err != nil {
		fmt.Println("RESULT", err)
		return 1
	}
	defer e.Close()
	out := json.NewEncoder(os.Stdout)
	switch s.Mode {
	case "up":
		_, err = e.Up(ctx, Request{Stack: s.Stack, Program: s.program(), ManagedBy: ManagedByCLI,
			Sink: func(ev Event) { _ = out.Encode(ev) }})
	case "list":
		var list []StackSummary
		if list, err = e.List(ctx, ""); err == nil {
			for _, st := range list {
				fmt.Println("STACK", st.Name)
			}
		}
	case "outputs":
		var outs program.Outputs
		if outs, err = e.Outputs(ctx, s.Stack); err == nil {
			fmt.Println("OUTPUT plain", outs.String("plain"))
		}
	}
	if err != nil {
		fmt.Println("RESULT", err)
		return 1
	}
	fmt.Println("RESULT ok")
	return 0
}
