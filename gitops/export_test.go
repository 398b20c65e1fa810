package gitops

import (
	"io/fs"

	"github.com/gitfleet/gitfleet/render"
)

// SetRenderFunc replaces how a commit is rendered, for tests that hold a
// render; the returned func restores it.
func SetRenderFunc(f func(fs.FS, render.Options) (*render.Content, error)) (restore func()) {
	old := renderFunc
	renderFunc = f
	return func() { renderFunc = old }
}
