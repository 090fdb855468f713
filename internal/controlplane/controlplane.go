// Package controlplane runs a local Kubernetes control plane for tests and `tfrs dev`: etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler and kwok with one simulated node, all
// on loopback, all built from the Go module proxy by `make tools`.
//
// A bare API server is not enough for Pulumi: destroy waits for foreground deletion (the
// garbage collector in kube-controller-manager), namespaces need the namespace controller,
// Deployments need the scheduler and a node whose kubelet (kwok) reports pods Ready.
package controlplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/tfrs-io/tfrs-operator/internal/tools"
)

//go:embed kwok-stages.yaml
var kwokStages []byte

// NodeName is the simulated node every pod is scheduled to.
const NodeName = "kwok-node-0"

// Options configure Start.
type Options struct {
	// Dir holds data, certificates, logs and the kubeconfig. A temporary directory (removed by
	// Stop) is used when empty.
	Dir string
	// Log, when set, also receives every process's output, line-prefixed with its name.
	Log io.Writer
}

// ControlPlane is a running local control plane.
type ControlPlane struct {
	Dir            string
	KubeconfigPath string
	RESTConfig     *rest.Config

	ownsDir         bool
	procs           []*proc
	stopProvisioner context.CancelFunc
	stopOnce        sync.Once
}

// StartT starts a control plane for a test and stops it when the test ends. It fails the
// test, naming the fix, when the tools are missing.
func StartT(t testing.TB) *ControlPlane {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cp, err := Start(ctx, Options{})
	if err != nil {
		t.Fatalf("local control plane: %v", err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	return cp
}

// Start starts every process, waits until the API server answers and the node is Ready, and
// returns. On any error everything already started is stopped again.
func Start(ctx context.Context, opts Options) (cp *ControlPlane, err error) {
	bins := map[string]string{}
	for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"} {
		if bins[name], err = tools.Bin(name); err != nil {
			return nil, err
		}
	}
	cp = &ControlPlane{Dir: opts.Dir}
	if cp.Dir == "" {
		if cp.Dir, err = os.MkdirTemp("", "tfrs-cp-"); err != nil {
			return nil, err
		}
		cp.ownsDir = true
	} else if err = os.MkdirAll(cp.Dir, 0o700); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = cp.Stop()
			cp = nil
		}
	}()

	certs, err := newPKI(filepath.Join(cp.Dir, "pki"))
	if err != nil {
		return cp, fmt.Errorf("certificates: %w", err)
	}
	ports, err := freePorts(3)
	if err != nil {
		return cp, err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	apiURL := "https://127.0.0.1:" + strconv.Itoa(ports[2])

	etcd, err := cp.start(opts, "etcd", bins["etcd"],
		"--name=default",
		"--data-dir="+filepath.Join(cp.Dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL,
		"--unsafe-no-fsync", // throwaway data: fsync only costs time here
		"--log-level=warn",
	)
	if err != nil {
		return cp, err
	}
	if err = waitHTTP(ctx, etcd, http.DefaultClient, etcdURL+"/health"); err != nil {
		return cp, err
	}

	tokens := filepath.Join(cp.Dir, "pki", "tokens.csv")
	if err = os.WriteFile(tokens, []byte(certs.adminToken+",admin,admin,system:masters\n"), 0o600); err != nil {
		return cp, err
	}
	api, err := cp.start(opts, "kube-apiserver", bins["kube-apiserver"],
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		// A loopback advertise address is refused by the endpoint reconciler; nothing in-cluster
		// talks to the API server through the kubernetes Service here.
		"--endpoint-reconciler-type=none",
		"--secure-port="+strconv.Itoa(ports[2]),
		"--tls-cert-file="+certs.servingCert, "--tls-private-key-file="+certs.servingKey,
		"--client-ca-file="+certs.caCert,
		"--token-auth-file="+tokens,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+certs.saPub,
		"--service-account-signing-key-file="+certs.saKey,
		"--service-cluster-ip-range=10.96.0.0/16",
		"--allow-privileged=true",
		"--cert-dir="+filepath.Join(cp.Dir, "apiserver"),
		"--enable-priority-and-fairness=false",
		"--profiling=false",
	)
	if err != nil {
		return cp, err
	}

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certs.caPEM)
	cp.RESTConfig = &rest.Config{
		Host:            apiURL,
		BearerToken:     certs.adminToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: certs.caPEM},
		QPS:             200,
		Burst:           400,
	}
	authed := &http.Client{Transport: &bearer{token: certs.adminToken, rt: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}}
	if err = waitHTTP(ctx, api, authed, apiURL+"/readyz"); err != nil {
		return cp, err
	}
	if cp.KubeconfigPath, err = writeKubeconfig(cp.Dir, apiURL, certs); err != nil {
		return cp, err
	}

	stages := filepath.Join(cp.Dir, "kwok-stages.yaml")
	if err = os.WriteFile(stages, kwokStages, 0o644); err != nil {
		return cp, err
	}
	kc := "--kubeconfig=" + cp.KubeconfigPath
	if _, err = cp.start(opts, "kube-controller-manager", bins["kube-controller-manager"], kc,
		// The token controller would need a signing key it does not have; tokens are not used
		// by anything that runs here (kwok does not mount volumes).
		"--controllers=*,-serviceaccount-token",
		"--leader-elect=false", "--secure-port=0",
		"--root-ca-file="+certs.caCert,
		"--service-cluster-ip-range=10.96.0.0/16",
		"--concurrent-gc-syncs=20",
	); err != nil {
		return cp, err
	}
	if _, err = cp.start(opts, "kube-scheduler", bins["kube-scheduler"], kc, "--leader-elect=false", "--secure-port=0"); err != nil {
		return cp, err
	}
	if _, err = cp.start(opts, "kwok", bins["kwok"], kc,
		"--config="+stages,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		"--node-port=0", // no kubelet endpoint server: nothing here needs logs or exec
		"--cidr=10.244.0.0/16", "--node-ip=10.240.0.1",
		"--node-lease-duration-seconds=40",
	); err != nil {
		return cp, err
	}
	if err = cp.addNode(ctx); err != nil {
		return cp, err
	}
	cs, err := cp.Client()
	if err != nil {
		return cp, err
	}
	// The provisioner outlives Start's ctx (which only bounds start-up); Stop ends it.
	var pctx context.Context
	pctx, cp.stopProvisioner = context.WithCancel(context.Background())
	if err = startProvisioner(pctx, cs); err != nil {
		return cp, fmt.Errorf("storage: %w", err)
	}
	return cp, nil
}

// Stop stops every process (newest first) and removes the directory when Start created it.
// It is safe to call more than once.
func (cp *ControlPlane) Stop() error {
	cp.stopOnce.Do(func() {
		if cp.stopProvisioner != nil {
			cp.stopProvisioner()
		}
		for i := len(cp.procs) - 1; i >= 0; i-- {
			cp.procs[i].stop(10 * time.Second)
		}
		if cp.ownsDir {
			_ = os.RemoveAll(cp.Dir)
		}
	})
	return nil
}

// Client returns a typed client for the control plane.
func (cp *ControlPlane) Client() (kubernetes.Interface, error) {
	return kubernetes.NewForConfig(cp.RESTConfig)
}

// Kubeconfig returns the kubeconfig file content (for a Pulumi provider's kubeconfig input).
func (cp *ControlPlane) Kubeconfig() (string, error) {
	b, err := os.ReadFile(cp.KubeconfigPath)
	return string(b), err
}

func (cp *ControlPlane) start(opts Options, name, bin string, args ...string) (*proc, error) {
	p, err := startProc(cp.Dir, name, bin, args, opts.Log)
	if err != nil {
		return nil, err
	}
	cp.procs = append(cp.procs, p)
	return p, nil
}

// addNode registers the simulated node and waits until kwok reports it Ready, so the first pod
// of a test is scheduled at once.
func (cp *ControlPlane) addNode(ctx context.Context) error {
	cs, err := cp.Client()
	if err != nil {
		return err
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        NodeName,
		Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
		Labels:      map[string]string{"kubernetes.io/hostname": NodeName, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "type": "kwok"},
	}}
	if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create node: %w", err)
	}
	for {
		n, err := cs.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err == nil {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					return nil
				}
			}
		}
		for _, p := range cp.procs {
			if p.exited() {
				return fmt.Errorf("%s exited: %v\n%s", p.name, p.err, p.tail(20))
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s not Ready: %w", NodeName, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func writeKubeconfig(dir, server string, certs *pki) (string, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: certs.caPEM}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: certs.adminToken}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "admin", Namespace: "default"}
	cfg.CurrentContext = "local"
	path := filepath.Join(dir, "kubeconfig")
	return path, clientcmd.WriteToFile(*cfg, path)
}

// waitHTTP polls url until it answers 200, the process exits, or ctx ends.
func waitHTTP(ctx context.Context, p *proc, c *http.Client, url string) error {
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := c.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if p.exited() {
			return fmt.Errorf("%s exited before it was ready: %v\n%s", p.name, p.err, p.tail(20))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready at %s: %w\n%s", p.name, url, ctx.Err(), p.tail(20))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// freePorts reserves n distinct loopback ports. They are released before the processes bind
// them; the window is small and tests in parallel packages each get their own.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, errors.Join(errors.New("reserve a loopback port"), err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

type bearer struct {
	token string
	rt    http.RoundTripper
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.rt.RoundTrip(r)
}

// pids lists the running processes, for tests that check nothing is left behind.
func (cp *ControlPlane) pids() []int {
	var out []int
	for _, p := range cp.procs {
		out = append(out, p.cmd.Process.Pid)
	}
	return out
}
