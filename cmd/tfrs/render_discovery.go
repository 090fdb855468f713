package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/version"
	apiversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes/scheme"
)

// defaultKubeVersion is the newest Kubernetes minor TFRS supports: the one whose client
// libraries it is built with and whose control plane its tests run on (TestDefaultKubeVersion
// keeps it in step with go.mod).
const defaultKubeVersion = "v1.37.0"

// A render has no cluster, and without one Helm assumes Kubernetes v1.20: a chart that
// requires more (the Jaeger chart says kubeVersion >= 1.21) refuses to render. The provider
// takes the version only from a cluster's discovery, so `tfrs render` serves a discovery
// document, and nothing else, on loopback: /version says --kube-version, /api and /apis list
// the built-in API groups of the client libraries (what Helm's .Capabilities.APIVersions
// sees). Every other request gets 404, so the provider finds no schema, counts the cluster as
// unreachable, and renders exactly as it would with none; nothing can be read or written.

// discoveryServer serves the discovery document until Close.
type discoveryServer struct {
	srv        *http.Server
	kubeconfig string
}

func startDiscovery(dir, kubeVersion string) (*discoveryServer, error) {
	v, err := version.ParseGeneric(kubeVersion)
	if err != nil {
		return nil, fmt.Errorf("%w: --kube-version %q: %v", errUsage, kubeVersion, err)
	}
	docs, err := discoveryDocs(v)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	for path, doc := range docs {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet || r.URL.Path != path {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(doc)
		})
	}
	d := &discoveryServer{srv: &http.Server{Handler: mux}, kubeconfig: filepath.Join(dir, "render.kubeconfig")}
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: render, cluster: {server: "http://%s"}}]
users: [{name: render, user: {}}]
contexts: [{name: render, context: {cluster: render, user: render}}]
current-context: render
`, l.Addr())
	if err := os.WriteFile(d.kubeconfig, []byte(kc), 0o600); err != nil {
		l.Close()
		return nil, err
	}
	go func() { _ = d.srv.Serve(l) }()
	return d, nil
}

func (d *discoveryServer) Close() { _ = d.srv.Close() }

// discoveryDocs are the JSON documents by path: /version, /api, /api/v1, /apis and
// /apis/<group>/<version>, from the client libraries' scheme.
func discoveryDocs(v *version.Version) (map[string][]byte, error) {
	byGV := map[schema.GroupVersion][]metav1.APIResource{}
	for gvk := range scheme.Scheme.AllKnownTypes() {
		if gvk.Version == "__internal" || strings.HasSuffix(gvk.Kind, "List") || strings.HasSuffix(gvk.Kind, "Options") || gvk.Kind == "WatchEvent" || gvk.Kind == "Status" {
			continue
		}
		plural, _ := meta.UnsafeGuessKindToResource(gvk)
		byGV[gvk.GroupVersion()] = append(byGV[gvk.GroupVersion()], metav1.APIResource{
			Name: plural.Resource, Kind: gvk.Kind, Verbs: metav1.Verbs{"get", "list"},
		})
	}
	docs := map[string]any{
		"/version": map[string]string{
			"major": fmt.Sprint(v.Major()), "minor": fmt.Sprint(v.Minor()),
			"gitVersion": "v" + v.String(), "platform": "linux/amd64",
		},
		"/api": metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: "127.0.0.1"}}},
	}
	groups := map[string]*metav1.APIGroup{}
	for gv, res := range byGV {
		sort.Slice(res, func(i, j int) bool { return res[i].Kind < res[j].Kind })
		list := metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String(), APIResources: res}
		if gv.Group == "" {
			docs["/api/"+gv.Version] = list
			continue
		}
		docs["/apis/"+gv.String()] = list
		g := groups[gv.Group]
		if g == nil {
			g = &metav1.APIGroup{Name: gv.Group}
			groups[gv.Group] = g
		}
		g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version})
	}
	gl := metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	for _, g := range groups {
		// Highest priority first (v2, v1, v1beta2 …), as an API server lists them.
		sort.Slice(g.Versions, func(i, j int) bool {
			return apiversion.CompareKubeAwareVersionStrings(g.Versions[i].Version, g.Versions[j].Version) > 0
		})
		g.PreferredVersion = g.Versions[0]
		gl.Groups = append(gl.Groups, *g)
	}
	sort.Slice(gl.Groups, func(i, j int) bool { return gl.Groups[i].Name < gl.Groups[j].Name })
	docs["/apis"] = gl
	out := map[string][]byte{}
	for p, d := range docs {
		b, err := json.Marshal(d)
		if err != nil {
			return nil, err
		}
		out[p] = b
	}
	return out, nil
}
