package main

import (
	"net"
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"
)

// Chart v4 renders with Helm's `--dry-run=server`, which gives templates `lookup`: a read of
// any object in the cluster with the provider's credentials, Secrets included. A chart from
// a pull request could put what it reads into a resource name or an error, and so into the
// preview's report. In the untrusted mode Helm gets its own API server instead, through
// HELM_KUBEAPISERVER (which Helm's client settings read and the provider's own client does
// not): a loopback stub that serves discovery (so lookup resolves kinds) and answers every
// object read "not found". Templates then see what `helm template` shows, an empty cluster,
// while the provider itself still previews against the real one.

// helmStub is the stub API server; Close stops it.
type helmStub struct {
	srv *http.Server
	url string
}

func startHelmStub() (*helmStub, error) {
	v, err := version.ParseGeneric(defaultKubeVersion)
	if err != nil {
		return nil, err
	}
	docs, err := discoveryDocs(v)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if doc, ok := docs[r.URL.Path]; ok && r.Method == http.MethodGet {
			_, _ = w.Write(doc)
			return
		}
		// An API group the stub does not know (a CRD's): an empty resource list, so lookup
		// of its kinds is "not found" as well, not an error.
		if parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/"); len(parts) == 3 && parts[0] == "apis" && r.Method == http.MethodGet {
			_, _ = w.Write([]byte(`{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"` + parts[1] + "/" + parts[2] + `","resources":[]}`))
			return
		}
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"message":"not found (tfrs: Helm's lookup sees no cluster in the untrusted mode)"}`))
	})
	s := &helmStub{srv: &http.Server{Handler: h}, url: "http://" + l.Addr().String()}
	go func() { _ = s.srv.Serve(l) }()
	return s, nil
}

// env is what the provider's environment gets: Helm's API server, and a token that is not
// the kubeconfig's (Helm would otherwise send that one to the stub).
func (s *helmStub) env() map[string]string {
	return map[string]string{"HELM_KUBEAPISERVER": s.url, "HELM_KUBETOKEN": "tfrs-untrusted-no-cluster"}
}

func (s *helmStub) Close() { _ = s.srv.Close() }
