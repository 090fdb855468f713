// Package manifest reads TFRS custom resources from YAML or JSON, several documents per file,
// exactly as `kubectl apply -f` takes them, so the CLI, the HTTP API and the examples share one
// decoder. Unknown fields are an error: a typo in a spec must not be silently dropped.
package manifest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
)

var codecs = func() serializer.CodecFactory {
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return serializer.NewCodecFactory(s, serializer.EnableStrict)
}()

// ErrNotTFRS is the error of a document that is not one of the TFRS kinds (a Deployment in
// the files given to the CLI, say).
var ErrNotTFRS = errors.New("not a TFRS resource")

// Decode returns every TFRS object in r, in document order. Empty documents are skipped; a
// document of another group or kind is an error naming its position (ErrNotTFRS).
func Decode(r io.Reader) ([]v1alpha1.Object, error) {
	var out []v1alpha1.Object
	err := EachDocument(r, func(i int, doc []byte) error {
		if err := checkKind(doc); err != nil {
			return fmt.Errorf("document %d: %w", i, err)
		}
		obj, _, err := codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			return fmt.Errorf("document %d: %w", i, err)
		}
		co, ok := obj.(v1alpha1.Object)
		if !ok {
			return fmt.Errorf("document %d: %T is not a TFRS resource", i, obj)
		}
		out = append(out, co)
		return nil
	})
	return out, err
}

// checkKind refuses a document of another group or kind by name, before the strict decoder
// would refuse it with a scheme error. A document without apiVersion and kind is left to the
// decoder, which says what is missing.
func checkKind(doc []byte) error {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil || head.APIVersion == "" || head.Kind == "" {
		return nil
	}
	gv, err := schema.ParseGroupVersion(head.APIVersion)
	if err != nil {
		return nil
	}
	kinds := make([]string, len(v1alpha1.Kinds))
	for i, k := range v1alpha1.Kinds {
		kinds[i] = string(k)
	}
	if gv.Group != v1alpha1.GroupVersion.Group || !slices.Contains(kinds, head.Kind) {
		return fmt.Errorf("%s %q (%s) is %w (%s)", head.Kind, head.Metadata.Name, head.APIVersion, ErrNotTFRS, strings.Join(kinds, "/"))
	}
	if gv != v1alpha1.GroupVersion {
		return fmt.Errorf("%s %q: apiVersion %s is not served; use %s", head.Kind, head.Metadata.Name, head.APIVersion, v1alpha1.GroupVersion)
	}
	return nil
}

// EachDocument calls fn with every non-empty YAML (or JSON) document of r and its position
// (from 1); documents of only whitespace and comments are skipped. It stops at fn's first error.
func EachDocument(r io.Reader, fn func(i int, doc []byte) error) error {
	rd := utilyaml.NewYAMLReader(bufio.NewReader(r))
	for i := 1; ; i++ {
		doc, err := rd.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("document %d: %w", i, err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		if err := fn(i, doc); err != nil {
			return err
		}
	}
}

// DecodeFile is Decode on a file, with the file name in errors.
func DecodeFile(path string) ([]v1alpha1.Object, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	objs, err := Decode(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return objs, nil
}

func stripComments(doc []byte) []byte {
	var b bytes.Buffer
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			b.Write(line)
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}
