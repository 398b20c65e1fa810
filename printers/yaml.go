package printers

import (
	"io"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gitfleet/gitfleet/status"
)

// YAML writes objects as one YAML stream, documents separated by "---",
// each exactly as its status file reads (status.Encode).
func YAML(w io.Writer, objs ...runtime.Object) error {
	for i, o := range objs {
		data, err := status.Encode(o)
		if err != nil {
			return err
		}
		if i > 0 {
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return err
			}
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
	}
	return nil
}
