package forge

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
)

// Kinds of forge.
const (
	GitHub = "github"
	GitLab = "gitlab"
	Gitea  = "gitea"
)

// Config says which forge and repository to talk to, as serve's flags
// --forge, --forge-url, --forge-token-file and --forge-token-env do.
type Config struct {
	// Kind is github, gitlab or gitea. Empty: inferred from Remote, which
	// only works for github.com and gitlab.com.
	Kind string
	// URL is the forge's web address, for self-hosted instances
	// (https://git.example.com). Empty: the public service for GitHub and
	// GitLab, and the scheme and host of an http(s) Remote otherwise.
	URL string
	// Remote is the repository's Git remote URL; it names the repository
	// (owner/name, or GitLab's group/subgroup/name).
	Remote string
	// TokenFile is a file holding the API token (surrounding space is
	// ignored); TokenEnv names an environment variable holding it. One of
	// them is needed.
	TokenFile string
	TokenEnv  string
	// HTTPClient is used for API calls; nil means http.DefaultClient.
	HTTPClient *http.Client
}

// locate is the host, the repository's path on it and the kind of forge
// that cfg's remote names (cfg.Kind, else inferred from the host).
func locate(cfg Config) (host, repoPath, kind string, err error) {
	host, repoPath, err = parseRemote(cfg.Remote)
	if err != nil {
		return "", "", "", err
	}
	kind = cfg.Kind
	if kind == "" {
		if kind = inferKind(host); kind == "" {
			return "", "", "", fmt.Errorf("cannot tell which forge hosts %s: set --forge github|gitlab|gitea (and --forge-url for a self-hosted one)", host)
		}
	}
	return host, repoPath, kind, nil
}

// New returns the client for the repository cfg names. It does not call
// the forge.
func New(cfg Config) (Forge, error) {
	host, repoPath, kind, err := locate(cfg)
	if err != nil {
		return nil, err
	}
	token, err := readToken(cfg)
	if err != nil {
		return nil, err
	}
	base := cfg.URL
	hc := cfg.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	hc = observed(hc)
	var f Forge
	switch kind {
	case GitHub:
		f, err = newGitHub(base, repoPath, token, hc)
	case GitLab:
		f, err = newGitLab(base, repoPath, token, hc)
	case Gitea:
		if base == "" {
			if base = webRoot(cfg.Remote); base == "" {
				return nil, fmt.Errorf("gitea: set --forge-url: the remote %s does not say where Gitea's API is", host)
			}
		}
		f, err = newGitea(base, repoPath, token, hc)
	default:
		return nil, fmt.Errorf("unknown forge %q: want github, gitlab or gitea", kind)
	}
	if err != nil {
		return nil, err
	}
	return classified{f}, nil
}

// inferKind knows only the public services by their exact host: a
// self-hosted "gitlab.example.com" may run anything.
func inferKind(host string) string {
	switch strings.ToLower(host) {
	case "github.com", "www.github.com":
		return GitHub
	case "gitlab.com", "www.gitlab.com":
		return GitLab
	}
	return ""
}

// scpLike is git's user@host:path remote form.
var scpLike = regexp.MustCompile(`^(?:[^@/]+@)?([^:/]+):(.+)$`)

// parseRemote returns the host and the repository path (without .git) of
// a Git remote URL: https://host/owner/name.git, ssh://git@host/owner/name
// or git@host:owner/name.git.
func parseRemote(remote string) (host, repoPath string, err error) {
	if remote == "" {
		return "", "", errors.New("no remote URL to name the repository")
	}
	var p string
	if strings.Contains(remote, "://") {
		u, err := url.Parse(remote)
		if err != nil {
			return "", "", fmt.Errorf("remote %q: %w", redactURL(remote), err)
		}
		host, p = u.Hostname(), u.Path
	} else if m := scpLike.FindStringSubmatch(remote); m != nil {
		host, p = m[1], m[2]
	} else {
		return "", "", fmt.Errorf("remote %q is not a URL of a forge's repository", remote)
	}
	p = strings.TrimSuffix(strings.Trim(p, "/"), ".git")
	if host == "" || strings.Count(p, "/") < 1 {
		return "", "", fmt.Errorf("remote %q does not name a repository as owner/name", redactURL(remote))
	}
	return host, p, nil
}

// webRoot is scheme://host[:port] of an http(s) remote, else "".
func webRoot(remote string) string {
	u, err := url.Parse(remote)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// redactURL drops credentials written into a remote URL.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	u.User = nil
	return u.String()
}

func readToken(cfg Config) (string, error) {
	var token string
	switch {
	case cfg.TokenFile != "" && cfg.TokenEnv != "":
		return "", errors.New("set either --forge-token-file or --forge-token-env, not both")
	case cfg.TokenFile != "":
		b, err := os.ReadFile(cfg.TokenFile)
		if err != nil {
			return "", fmt.Errorf("reading --forge-token-file: %w", err)
		}
		token = strings.TrimSpace(string(b))
	case cfg.TokenEnv != "":
		token = strings.TrimSpace(os.Getenv(cfg.TokenEnv))
	default:
		return "", errors.New("no forge token: set --forge-token-file or --forge-token-env")
	}
	if token == "" {
		if cfg.TokenFile != "" {
			return "", fmt.Errorf("--forge-token-file %s is empty", cfg.TokenFile)
		}
		return "", fmt.Errorf("--forge-token-env: $%s is empty or unset", cfg.TokenEnv)
	}
	return token, nil
}

// secret keeps the token out of every error a client returns: a forge or
// a proxy may echo request headers in an error body, and libraries put
// response bodies into their errors.
type secret string

func (s secret) clean(err error) error {
	if err == nil || s == "" || !strings.Contains(err.Error(), string(s)) {
		return err
	}
	// No Unwrap: errors.As would reach the text with the token again.
	return errors.New(strings.ReplaceAll(err.Error(), string(s), "[redacted]"))
}
