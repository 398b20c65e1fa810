// Package ingest takes one commit of the fleet repository into a hub, in
// the steps `gitfleet serve`, `gitfleet simulate` and `gitfleet plan` (through
// simulate) all take: the commit's tree is rendered into hub content
// (Renderer), every placement whose selected resources changed gets a new
// resource snapshot annotated with the commit (Record), the fleet objects
// of the tip are admitted as an API server would admit them (Admit), and
// the approvals people merged are taken (TakeApprovals). The callers decide
// which commits to ingest and when: serve follows the branch and renders
// beside its loop, simulate replays the history at once.
package ingest

import (
	"context"
	"io/fs"

	"github.com/go-git/go-git/v5/plumbing"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/render"
)

// Hub is what an ingest reads and writes: the engine's hub and the Git
// loop's inputs.
type Hub interface {
	hub.Hub
	hub.Desired
}

// Ingest is the ingest of commits into one hub.
type Ingest struct {
	hub      Hub
	renderer *Renderer
	admitter *admitter
}

// New returns the ingest of commits into h, rendered by r.
func New(h Hub, r *Renderer) *Ingest {
	return &Ingest{hub: h, renderer: r, admitter: newAdmitter(h)}
}

// Render renders the hub content of commit (Renderer.Render).
func (in *Ingest) Render(ctx context.Context, src *gitsource.Source, commit plumbing.Hash) (*render.Content, error) {
	return in.renderer.Render(ctx, src, commit)
}

// Record records the resource and override snapshots of a rendered commit
// (recordSnapshots) and returns how many it created.
func (in *Ingest) Record(ctx context.Context, content *render.Content, commit plumbing.Hash) (int, error) {
	return recordSnapshots(ctx, in.hub, content, commit.String())
}

// Admit applies the fleet objects of content, the tip's, and returns the
// changes refused, one line each (admitter.Admit).
func (in *Ingest) Admit(ctx context.Context, content *render.Content) ([]string, error) {
	return in.admitter.Admit(ctx, content)
}

// TakeApprovals takes the Approved conditions people merged in fromGit
// into the hub (takeApprovals) and returns the requests whose approval
// changed.
func (in *Ingest) TakeApprovals(ctx context.Context, fromGit []*fleet.ApprovalRequest) ([]*fleet.ApprovalRequest, error) {
	return takeApprovals(ctx, in.hub, fromGit)
}

// ReadApprovals reads the approval request files of commit's approvals/
// folder, with the files themselves (for a caller that compares them with
// what it wrote) and the errors of those that do not read.
func ReadApprovals(ctx context.Context, src *gitsource.Source, commit plumbing.Hash) (fs.FS, []*fleet.ApprovalRequest, []render.ManifestError, error) {
	fsys, err := DirFS(ctx, src, commit, render.ApprovalsDir)
	if err != nil {
		return nil, nil, nil, err
	}
	ars, errs := render.ReadApprovals(fsys, render.ApprovalsDir)
	return fsys, ars, errs, nil
}

// RefusedStrategy says why the strategy at key was refused in the last
// admitted content, or "" (admitter.RefusedStrategy), for the engine.
func (in *Ingest) RefusedStrategy(key hub.Key) string { return in.admitter.RefusedStrategy(key) }
