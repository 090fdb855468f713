package controlplane

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// StorageClassName is the default StorageClass of the local control plane. Its provisioner is
// the loop below: kwok runs no kubelet and there is no CSI driver, so without it a PVC would
// stay Pending forever and Pulumi's PVC await (and every pod that mounts one) would hang.
const (
	StorageClassName = "standard"
	provisionerName  = "tfrs.io/local-fake"
)

// startProvisioner installs the default StorageClass and, until ctx ends, creates a PV for
// every PVC that asks for it. The PV controller in kube-controller-manager does the binding,
// exactly as with a real external provisioner.
func startProvisioner(ctx context.Context, cs kubernetes.Interface) error {
	sc := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: StorageClassName, Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
		Provisioner:       provisionerName,
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate),
	}
	if _, err := cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	go func() {
		for ctx.Err() == nil {
			provisionPending(ctx, cs)
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	return nil
}

// provisionPending is one pass: a polling loop keeps this small and good enough for tests.
func provisionPending(ctx context.Context, cs kubernetes.Interface) {
	pvcs, err := cs.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, pvc := range pvcs.Items {
		if pvc.Status.Phase != corev1.ClaimPending || pvc.Spec.VolumeName != "" || pvc.DeletionTimestamp != nil {
			continue
		}
		if pvc.Annotations["volume.kubernetes.io/storage-provisioner"] != provisionerName {
			continue
		}
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{
				Name:        "pvc-" + string(pvc.UID),
				Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": provisionerName},
			},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: pvc.Spec.Resources.Requests[corev1.ResourceStorage]},
				AccessModes:                   pvc.Spec.AccessModes,
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
				StorageClassName:              StorageClassName,
				ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID},
				PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/tfrs-local-pv/" + string(pvc.UID)}},
			},
		}
		_, _ = cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	}
}
