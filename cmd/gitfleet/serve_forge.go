package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/spf13/pflag"

	"github.com/gitfleet/gitfleet/gitsource"
	"github.com/gitfleet/gitfleet/gitsource/forge"
	"github.com/gitfleet/gitfleet/gitsource/gitops"
	"github.com/gitfleet/gitfleet/gitsource/plan"
)

// forgeOptions are serve's --forge flags.
type forgeOptions struct {
	kind, url, tokenFile, tokenEnv string
	clusterStatuses, noRollbacks   bool
	retryMax                       time.Duration
}

func (o *forgeOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.kind, "forge", "", "forge hosting --repo: github, gitlab or gitea; opens approval pull requests and sets commit statuses (inferred for github.com and gitlab.com remotes when a forge token is given)")
	f.StringVar(&o.url, "forge-url", "", "web address of a self-hosted forge (https://git.example.com; default: the public service, or the scheme and host of an http(s) --repo for gitea)")
	f.StringVar(&o.tokenFile, "forge-token-file", "", "file holding the forge API token (needs pull request, comment and commit status access)")
	f.StringVar(&o.tokenEnv, "forge-token-env", "", "environment variable holding the forge API token")
	f.BoolVar(&o.clusterStatuses, "forge-cluster-statuses", false, "also set one commit status per cluster of each run (gitfleet/<run>/<cluster>)")
	f.BoolVar(&o.noRollbacks, "no-rollback-pull-requests", false, "do not open a pull request that rolls a failed run back (branch gitfleet/rollback/<run>)")
	f.DurationVar(&o.retryMax, "forge-retry-max", 5*time.Minute, "a failed forge call is retried after 1s, doubling up to this wait; the rollout never waits for it")
}

// config checks the forge flags and returns the forge of repo, nil when
// none is asked for. Errors name the flag to fix; the token never appears
// in them.
func (o *forgeOptions) config(repo string) (*gitops.ForgeConfig, error) {
	if o.kind == "" && o.url == "" && o.tokenFile == "" && o.tokenEnv == "" {
		if o.clusterStatuses {
			return nil, errors.New("--forge-cluster-statuses needs a forge: set --forge and --forge-token-file or --forge-token-env")
		}
		return nil, nil
	}
	if o.kind != "" && !slices.Contains([]string{forge.GitHub, forge.GitLab, forge.Gitea}, o.kind) {
		return nil, fmt.Errorf("--forge %q: want github, gitlab or gitea", o.kind)
	}
	switch {
	case o.tokenFile != "" && o.tokenEnv != "":
		return nil, errors.New("--forge-token-file and --forge-token-env: set one, not both")
	case o.tokenFile == "" && o.tokenEnv == "":
		return nil, errors.New("--forge needs an API token: set --forge-token-file or --forge-token-env")
	}
	f, err := forge.New(forge.Config{Kind: o.kind, URL: o.url, Remote: repo, TokenFile: o.tokenFile, TokenEnv: o.tokenEnv})
	if err != nil {
		return nil, fmt.Errorf("--forge: %w", err)
	}
	if o.retryMax < time.Second {
		return nil, fmt.Errorf("--forge-retry-max %s: want at least 1s", o.retryMax)
	}
	return &gitops.ForgeConfig{Forge: f, ClusterStatuses: o.clusterStatuses, RetryMax: o.retryMax, NoRollbacks: o.noRollbacks}, nil
}

// rollbackPlan is the plan of merging a rollback branch's tip head into
// the tracked branch at base, from the state recorded in status/ there:
// the body of the rollback pull request (gitops.ForgeConfig.Plan).
func rollbackPlan(src *gitsource.Source, hubPath string) func(ctx context.Context, base gitsource.Head, head plumbing.Hash) (string, error) {
	return func(ctx context.Context, base gitsource.Head, head plumbing.Hash) (string, error) {
		statusTip := base.Status
		if statusTip.IsZero() {
			statusTip = base.Commit
		}
		p, err := plan.Compute(ctx, plan.Options{Repo: src.GitDir(), Base: base.Commit.String(), Head: head.String(), Status: statusTip.String(), Path: hubPath})
		if err != nil {
			return "", err
		}
		return plan.Comment(p), nil
	}
}
