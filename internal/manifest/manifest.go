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

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
)

var codecs = func() serializer.CodecFactory {
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return serializer.NewCodecFactory(s, serializer.EnableStrict)
}()

// Decode returns every TFRS object in r, in document order. Empty documents are skipped; a
// document of another group or kind is an error naming its position.
func Decode(r io.Reader) ([]v1alpha1.Object, error) {
	var out []v1alpha1.Object
	err := EachDocument(r, func(i int, doc []byte) error {
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
