package gitsource

import (
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
)

// maxSecretSize bounds credential files; keys and tokens are far smaller.
const maxSecretSize = 64 << 10

// defaultTokenUser is the username sent with a token over HTTP basic auth.
// GitHub documents it; GitLab and Gitea accept any non-empty name.
const defaultTokenUser = "x-access-token"

// Auth says where credentials come from. Secrets are named by file or
// environment variable, never given inline, and are re-read before every
// network operation so a rotated secret is picked up without a restart.
//
// For http(s) remotes set either a token (TokenFile or TokenEnv) or a
// username and password (Username/UsernameFile plus PasswordFile or
// PasswordEnv). Without either, credentials in the URL's userinfo are used.
// For ssh remotes set SSHKeyFile (otherwise the ssh-agent is used) and
// KnownHostsFile (otherwise $SSH_KNOWN_HOSTS or ~/.ssh/known_hosts); host
// keys are always verified. file:// and git:// remotes take no credentials.
type Auth struct {
	Username     string // HTTP username; not secret
	UsernameFile string // file holding the HTTP username
	PasswordFile string // file holding the HTTP password
	PasswordEnv  string // environment variable holding the HTTP password
	TokenFile    string // file holding an HTTP access token
	TokenEnv     string // environment variable holding an HTTP access token
	TokenUser    string // username sent with the token (default "x-access-token")

	SSHKeyFile           string // PEM/OpenSSH private key
	SSHKeyPassphraseFile string // passphrase of SSHKeyFile, if encrypted
	KnownHostsFile       string // known_hosts used to verify the server

	CAFile string // extra PEM CA bundle for https remotes
}

// hasHTTPCredentials reports whether a configures an HTTP username,
// password or token.
func (a Auth) hasHTTPCredentials() bool {
	return a.Username != "" || a.UsernameFile != "" || a.PasswordFile != "" || a.PasswordEnv != "" ||
		a.TokenFile != "" || a.TokenEnv != ""
}

// credentials is an Auth resolved for one operation.
type credentials struct {
	method   transport.AuthMethod
	caBundle []byte
}

// resolve reads the secrets a is pointing at and returns the go-git auth
// method for ep. Every secret read is registered with r first, so that even
// errors about it are scrubbed.
func (a Auth) resolve(ep *transport.Endpoint, r *redactor) (credentials, error) {
	var c credentials
	r.add(ep.Password)
	switch ep.Protocol {
	case "http", "https":
		if a.CAFile != "" {
			ca, err := readBounded(a.CAFile, "CA file")
			if err != nil {
				return c, err
			}
			c.caBundle = ca
		}
		m, err := a.httpAuth(ep, r)
		c.method = m
		return c, err
	case "ssh":
		m, err := a.sshAuth(ep, r)
		c.method = m
		return c, err
	}
	return c, nil
}

func (a Auth) httpAuth(ep *transport.Endpoint, r *redactor) (transport.AuthMethod, error) {
	hasToken := a.TokenFile != "" || a.TokenEnv != ""
	hasPassword := a.PasswordFile != "" || a.PasswordEnv != ""
	if hasToken && hasPassword {
		return nil, errorf("auth", ErrInvalid, "set either a token or a password, not both")
	}
	switch {
	case hasToken:
		token, err := secret(a.TokenFile, a.TokenEnv, "token", r)
		if err != nil {
			return nil, err
		}
		user := a.TokenUser
		if user == "" {
			user = defaultTokenUser
		}
		return &githttp.BasicAuth{Username: user, Password: token}, nil
	case hasPassword:
		password, err := secret(a.PasswordFile, a.PasswordEnv, "password", r)
		if err != nil {
			return nil, err
		}
		user, err := a.username()
		if err != nil {
			return nil, err
		}
		if user == "" {
			user = ep.User
		}
		if user == "" {
			return nil, errorf("auth", ErrInvalid, "a password needs a username (Username or UsernameFile)")
		}
		return &githttp.BasicAuth{Username: user, Password: password}, nil
	case ep.User != "":
		// Credentials in the URL; a lone username is a token.
		if ep.Password == "" {
			r.add(ep.User)
			return &githttp.BasicAuth{Username: defaultTokenUser, Password: ep.User}, nil
		}
		return &githttp.BasicAuth{Username: ep.User, Password: ep.Password}, nil
	}
	return nil, nil
}

func (a Auth) username() (string, error) {
	if a.UsernameFile == "" {
		return a.Username, nil
	}
	b, err := readBounded(a.UsernameFile, "username file")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

func (a Auth) sshAuth(ep *transport.Endpoint, r *redactor) (transport.AuthMethod, error) {
	user := ep.User
	if user == "" {
		user = "git"
	}
	var helper *gitssh.HostKeyCallbackHelper
	if a.KnownHostsFile != "" {
		if _, err := os.Stat(a.KnownHostsFile); err != nil {
			return nil, errorf("auth", ErrInvalid, fmt.Sprintf("known_hosts %s: %v", a.KnownHostsFile, unwrapPathError(err)))
		}
		db, err := gitssh.NewKnownHostsDb(a.KnownHostsFile)
		if err != nil {
			return nil, newError(r, "auth", "", fmt.Errorf("known_hosts %s: %w", a.KnownHostsFile, err), ErrInvalid)
		}
		port := ep.Port
		if port == 0 {
			port = 22
		}
		// Offer the server only the key types known_hosts can verify.
		helper = &gitssh.HostKeyCallbackHelper{
			HostKeyCallback:   db.HostKeyCallback(),
			HostKeyAlgorithms: db.HostKeyAlgorithms(net.JoinHostPort(strings.Trim(ep.Host, "[]"), strconv.Itoa(port))),
		}
	}
	if a.SSHKeyFile == "" {
		agent, err := gitssh.NewSSHAgentAuth(user)
		if err != nil {
			return nil, newError(r, "auth", "", fmt.Errorf("no SSHKeyFile and no usable ssh-agent: %w", err), ErrAuth)
		}
		if helper != nil {
			agent.HostKeyCallbackHelper = *helper
		}
		return agent, nil
	}
	pem, err := readBounded(a.SSHKeyFile, "ssh key file")
	if err != nil {
		return nil, err
	}
	var passphrase string
	if a.SSHKeyPassphraseFile != "" {
		p, err := readBounded(a.SSHKeyPassphraseFile, "ssh key passphrase file")
		if err != nil {
			return nil, err
		}
		passphrase = strings.TrimSpace(string(p))
		r.add(passphrase)
	}
	keys, err := gitssh.NewPublicKeys(user, pem, passphrase)
	if err != nil {
		// The parse error never quotes key material, but name only the file.
		return nil, errorf("auth", ErrInvalid, fmt.Sprintf("ssh key %s: cannot parse (wrong format or passphrase)", a.SSHKeyFile))
	}
	if helper != nil {
		keys.HostKeyCallbackHelper = *helper
	}
	return keys, nil
}

// secret reads a secret from file (preferred) or env, registers it with r
// and returns it without surrounding whitespace.
func secret(file, env, what string, r *redactor) (string, error) {
	if file != "" {
		b, err := readBounded(file, what+" file")
		if err != nil {
			return "", err
		}
		v := strings.TrimSpace(string(b))
		r.add(v)
		if v == "" {
			return "", errorf("auth", ErrInvalid, fmt.Sprintf("%s file %s is empty", what, file))
		}
		return v, nil
	}
	v := strings.TrimSpace(os.Getenv(env))
	r.add(v)
	if v == "" {
		return "", errorf("auth", ErrInvalid, fmt.Sprintf("%s environment variable %s is unset or empty", what, env))
	}
	return v, nil
}

// readBounded reads a small credential or config file. Errors name the file
// but never include its content.
func readBounded(path, what string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, errorf("auth", ErrInvalid, fmt.Sprintf("%s %s: %v", what, path, unwrapPathError(err)))
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSecretSize+1))
	if err != nil {
		return nil, errorf("auth", ErrInvalid, fmt.Sprintf("%s %s: %v", what, path, unwrapPathError(err)))
	}
	if len(b) > maxSecretSize {
		return nil, errorf("auth", ErrTooLarge, fmt.Sprintf("%s %s is larger than %d bytes", what, path, maxSecretSize))
	}
	return b, nil
}

// unwrapPathError drops the path from an *os.PathError, which the caller
// already names.
func unwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}
