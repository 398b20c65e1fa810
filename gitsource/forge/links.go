package forge

import (
	"fmt"
	"strings"
)

// CommitLinks returns the address of a commit's page on the forge that
// hosts cfg's repository, for pages that link to the commits they show
// (the web view's timeline). It needs no token and calls nothing.
func CommitLinks(cfg Config) (func(sha string) string, error) {
	host, repoPath, kind, err := locate(cfg)
	if err != nil {
		return nil, err
	}
	base := strings.TrimSuffix(cfg.URL, "/")
	commit := "/commit/"
	switch kind {
	case GitHub:
		if base == "" {
			base = "https://github.com"
		}
	case GitLab:
		if base == "" {
			base = "https://gitlab.com"
		}
		commit = "/-/commit/"
	case Gitea:
		if base == "" {
			base = webRoot(cfg.Remote)
		}
	default:
		return nil, fmt.Errorf("unknown forge %q: want github, gitlab or gitea", kind)
	}
	if base == "" {
		return nil, fmt.Errorf("%s: set --forge-url: the remote %s does not say where its pages are", kind, host)
	}
	prefix := base + "/" + repoPath + commit
	return func(sha string) string { return prefix + sha }, nil
}
