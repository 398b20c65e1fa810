package gitops

import (
	"context"
	"io/fs"

	"github.com/gitfleet/gitfleet/render"
	"github.com/gitfleet/gitfleet/render/renderproc"
)

// SetRenderFunc replaces how a commit is rendered (renderproc.Render), for
// tests that watch a render; the returned func restores it.
func SetRenderFunc(f func(context.Context, fs.FS, render.Options, renderproc.Limits) (*render.Content, error)) (restore func()) {
	old := renderFunc
	renderFunc = f
	return func() { renderFunc = old }
}
