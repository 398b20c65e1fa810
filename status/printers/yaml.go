package printers

import (
	"bufio"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/gitfleet/gitfleet/status"
)

// YAMLStream writes a YAML stream one object at a time, straight to the
// writer: printing a fleet never holds more than one object's document, and
// callers can list and print kind by kind.
type YAMLStream struct {
	w *bufio.Writer
	n int
}

// NewYAMLStream starts a stream on w; Flush ends it.
func NewYAMLStream(w io.Writer) *YAMLStream {
	return &YAMLStream{w: bufio.NewWriterSize(w, 32<<10)}
}

// Write appends obj as the next document.
func (s *YAMLStream) Write(obj runtime.Object) error {
	if s.n > 0 {
		if _, err := s.w.WriteString("---\n"); err != nil {
			return err
		}
	}
	s.n++
	return status.EncodeTo(s.w, obj)
}

// WriteManifest appends a workload manifest (any kind) as the next
// document, keys sorted as kubectl -o yaml prints them.
func (s *YAMLStream) WriteManifest(u *unstructured.Unstructured) error {
	out, err := yaml.Marshal(u.Object)
	if err != nil {
		return fmt.Errorf("encode %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	if s.n > 0 {
		if _, err := s.w.WriteString("---\n"); err != nil {
			return err
		}
	}
	s.n++
	_, err = s.w.Write(out)
	return err
}

// Flush writes what is buffered.
func (s *YAMLStream) Flush() error { return s.w.Flush() }
