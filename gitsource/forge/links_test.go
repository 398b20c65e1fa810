package forge

import "testing"

func TestCommitLinksPointAtEachForgesCommitPage(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"github by its host", Config{Remote: "git@github.com:acme/fleet.git"}, "https://github.com/acme/fleet/commit/abc"},
		{"gitlab subgroup", Config{Remote: "https://gitlab.com/acme/infra/fleet.git"}, "https://gitlab.com/acme/infra/fleet/-/commit/abc"},
		{"gitea from the remote", Config{Kind: Gitea, Remote: "http://git.local:3000/acme/fleet.git"}, "http://git.local:3000/acme/fleet/commit/abc"},
		{"self-hosted gitlab", Config{Kind: GitLab, URL: "https://code.example/", Remote: "ssh://git@code.example/acme/fleet"}, "https://code.example/acme/fleet/-/commit/abc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			link, err := CommitLinks(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got := link("abc"); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
	if _, err := CommitLinks(Config{Remote: "git@git.example:acme/fleet.git"}); err == nil {
		t.Error("an unknown host without --forge gave links")
	}
}
