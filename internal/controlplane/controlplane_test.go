//go:build integration

package controlplane

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestControlPlaneRunsWorkloads checks what Pulumi relies on: a Deployment becomes Ready
// (scheduler + kwok), a namespace deleted in the foreground really goes away (namespace
// controller + garbage collector), and Stop leaves no process behind.
func TestControlPlaneRunsWorkloads(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	cp := StartT(t)
	t.Logf("control plane started in %s", time.Since(start).Round(time.Millisecond))
	cs, err := cp.Client()
	require.NoError(t, err)

	v, err := cs.Discovery().ServerVersion()
	require.NoError(t, err)
	require.NotEqual(t, "0", v.Major, "server version must be stamped at build time")

	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "smoke"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	labels := map[string]string{"app": "web"}
	_, err = cs.AppsV1().Deployments("smoke").Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		d, err := cs.AppsV1().Deployments("smoke").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && d.Status.ReadyReplicas == 2 && d.Status.ObservedGeneration == d.Generation
	}, time.Minute, 200*time.Millisecond, "deployment never became ready")

	// The default StorageClass binds claims, so PVC awaits and pods with volumes work.
	_, err = cs.CoreV1().PersistentVolumeClaims("smoke").Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		pvc, err := cs.CoreV1().PersistentVolumeClaims("smoke").Get(ctx, "data", metav1.GetOptions{})
		return err == nil && pvc.Status.Phase == corev1.ClaimBound
	}, time.Minute, 200*time.Millisecond, "claim never bound")

	fg := metav1.DeletePropagationForeground
	require.NoError(t, cs.CoreV1().Namespaces().Delete(ctx, "smoke", metav1.DeleteOptions{PropagationPolicy: &fg}))
	require.Eventually(t, func() bool {
		_, err := cs.CoreV1().Namespaces().Get(ctx, "smoke", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 2*time.Minute, 250*time.Millisecond, "namespace was never deleted")

	pids := cp.pids()
	require.Len(t, pids, 5)
	require.NoError(t, cp.Stop())
	for _, pid := range pids {
		require.False(t, alive(pid), "process %d still running after Stop", pid)
	}
	_, err = os.Stat(cp.Dir)
	require.True(t, os.IsNotExist(err), "temporary directory must be removed")
}

// TestNoOrphansWhenOwnerIsKilled starts a control plane in a child process, SIGKILLs that
// child (as a test timeout or a crash would) and checks that every control-plane process died
// with it.
func TestNoOrphansWhenOwnerIsKilled(t *testing.T) {
	if os.Getenv("TFRS_CP_CHILD") == "1" {
		cp, err := Start(context.Background(), Options{})
		if err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
		fmt.Println("PIDS", strings.Trim(fmt.Sprint(cp.pids()), "[]"))
		select {} // wait to be killed
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestNoOrphansWhenOwnerIsKilled$")
	cmd.Env = append(os.Environ(), "TFRS_CP_CHILD=1")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()

	var pids []int
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "ERR") {
			t.Fatal(line)
		}
		if rest, ok := strings.CutPrefix(line, "PIDS "); ok {
			for _, f := range strings.Fields(rest) {
				pid, err := strconv.Atoi(f)
				require.NoError(t, err)
				pids = append(pids, pid)
			}
			break
		}
	}
	require.Len(t, pids, 5, "child did not report its processes")
	for _, pid := range pids {
		require.True(t, alive(pid))
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	require.Eventually(t, func() bool {
		for _, pid := range pids {
			if alive(pid) {
				return false
			}
		}
		return true
	}, 15*time.Second, 100*time.Millisecond, "control-plane processes outlived their owner")
}

func alive(pid int) bool {
	// A zombie still answers signal 0; read its state to tell it apart from a live process.
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndex(s, ")")
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
