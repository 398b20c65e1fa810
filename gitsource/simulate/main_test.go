package simulate

import (
	"os"
	"testing"

	"github.com/gitfleet/gitfleet/render/renderproc"
)

// TestMain lets this test binary be the render worker: commits render in
// a child process of it, as in gitfleet.
func TestMain(m *testing.M) {
	renderproc.Main()
	os.Exit(m.Run())
}
