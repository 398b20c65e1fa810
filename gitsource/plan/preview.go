package plan

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitfleet/gitfleet/gitsource"
	"github.com/gitfleet/gitfleet/gitsource/forge"
	"github.com/gitfleet/gitfleet/status"
)

// Previewer keeps the rollout preview on the open pull requests into the
// tracked branch that change hub content: one comment per pull request,
// found again by forge.PlanMarker and edited (never duplicated) when the
// pull request's head, the tracked branch or the recorded state moves.
// Approval pull requests (gitfleet/approve/…) and pull requests from forks
// (whose branches the remote does not have) get none.
type Previewer struct {
	Forge  forge.Forge
	Source *gitsource.Source
	// Path is the hub content folder (serve's --path).
	Path string
	Log  *slog.Logger

	mu sync.Mutex
	// posted is, by pull request, the inputs of the preview last posted
	// (or found to need none): the same inputs make the same preview.
	posted map[int]string
}

// Sync brings every preview up to date with head, the tips of the tracked
// and status branches. It returns the failures (each pull request is tried
// on its own; a failed one is tried again on the next Sync).
func (p *Previewer) Sync(ctx context.Context, head gitsource.Head) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.posted == nil {
		p.posted = map[int]string{}
	}
	log := p.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	prs, err := p.Forge.OpenPRs(ctx)
	if err != nil {
		return fmt.Errorf("listing pull requests: %w", err)
	}
	statusTip := head.Status
	if statusTip.IsZero() {
		statusTip = head.Commit
	}
	var errs []error
	for _, pr := range prs {
		if pr.Base != p.Source.Branch() || pr.Fork || strings.HasPrefix(pr.Head, gitsource.ApproveBranchPrefix) {
			continue
		}
		inputs := strings.Join([]string{pr.HeadSHA, head.Commit.String(), statusTip.String()}, " ")
		if p.posted[pr.Number] == inputs {
			continue
		}
		body, err := p.preview(ctx, pr, head.Commit, statusTip)
		if err != nil {
			errs = append(errs, fmt.Errorf("previewing pull request %d: %w", pr.Number, err))
			continue
		}
		if body != "" {
			if err := forge.UpsertComment(ctx, p.Forge, pr.Number, forge.PlanMarker, body); err != nil {
				errs = append(errs, fmt.Errorf("posting the preview on pull request %d: %w", pr.Number, err))
				continue
			}
			log.Info("rollout preview posted", "pull_request", pr.URL, "head", short(pr.HeadSHA))
		}
		p.posted[pr.Number] = inputs
	}
	return errors.Join(errs...)
}

// preview is the comment for one pull request, or "" when it changes no
// hub content.
func (p *Previewer) preview(ctx context.Context, pr forge.PR, base, statusTip plumbing.Hash) (string, error) {
	tip, err := p.Source.FetchBranch(ctx, pr.Head)
	if err != nil {
		return "", err
	}
	repo := p.Source.GitDir()
	changed, err := git(ctx, repo, nil, "diff", "--name-only", "-z", base.String()+"..."+tip.String())
	if err != nil {
		return "", err
	}
	if !touchesHubContent(strings.Split(changed, "\x00"), p.Path, func() bool { return kustomized(ctx, repo, tip, p.Path) }) {
		return "", nil
	}
	// The engine of the preview logs nothing: its failures are predictions,
	// in the comment, not serve's own.
	pl, err := Compute(ctx, Options{Repo: repo, Base: base.String(), Head: tip.String(), Status: statusTip.String(), Path: p.Path})
	if errors.Is(err, ErrConflict) {
		return fmt.Sprintf("### gitfleet plan\n\nNo preview for `%s`: %s\n", short(tip.String()), mdEscape(err.Error())), nil
	}
	if err != nil {
		return "", err
	}
	return Comment(pl), nil
}

// touchesHubContent reports whether any path is hub content, as serve
// decides whether a commit needs rendering: below the hub content folder,
// outside gitfleet's own status/ and approvals/ trees, and a manifest
// (.yaml, .yml, .json, a kustomization) — or any file when the folder is
// built with kustomize, which may read it.
func touchesHubContent(paths []string, dir string, kustomized func() bool) bool {
	root := strings.Trim(path.Clean(dir), "/")
	var other bool
	for _, p := range paths {
		if p == "" || gitsource.OnlyUnder([]string{p}, status.StatusDir+"/", status.ApprovalsDir+"/") {
			continue
		}
		if root != "." && !strings.HasPrefix(p, root+"/") {
			continue
		}
		switch base := path.Base(p); {
		case slices.Contains(kustomizationNames, base):
			return true
		case slices.Contains([]string{".yaml", ".yml", ".json"}, strings.ToLower(path.Ext(base))):
			return true
		}
		other = true
	}
	return other && kustomized()
}

// kustomizationNames are the file names kustomize recognises.
var kustomizationNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// kustomized reports whether commit builds dir with kustomize.
func kustomized(ctx context.Context, repo string, commit plumbing.Hash, dir string) bool {
	for _, n := range kustomizationNames {
		if _, err := git(ctx, repo, nil, "cat-file", "-e", commit.String()+":"+path.Join(dir, n)); err == nil {
			return true
		}
	}
	return false
}
