package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/gitfleet/gitfleet/gitsource"
	"github.com/gitfleet/gitfleet/gitsource/forge"
	"github.com/gitfleet/gitfleet/gitsource/gitops"
	"github.com/gitfleet/gitfleet/gitsource/plan"
)

// runPreviews keeps the rollout preview comment of every open pull request
// into the tracked branch up to date (plan.Previewer), checking the forge
// every poll interval. Each round is one forge call of the daemon: a forge
// that fails is retried with backoff and never holds up a rollout, and a
// round still waiting is replaced by the next one.
func runPreviews(ctx context.Context, calls *gitops.ForgeCalls, src *gitsource.Source, path string, every time.Duration, log *slog.Logger) {
	if every <= 0 {
		every = 30 * time.Second
	}
	p := &plan.Previewer{Forge: calls.Forge(), Source: src, Path: path, Log: log}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if head, err := src.Head(ctx); err == nil {
			calls.Do("preview", gitops.ForgeOpComment, func(ctx context.Context, _ forge.Forge) error { return p.Sync(ctx, head) })
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
