package gitsource

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitfleet/gitfleet/internal/testing/gittest"
)

func TestSSH(t *testing.T) {
	f := newFixture(t)
	client := gittest.NewSSHKey(t)
	addr, hostKey := gittest.SSHServer(t, f.root, client.Signer.PublicKey())

	t.Run("key and known_hosts", func(t *testing.T) {
		cfg := f.config(t)
		cfg.URL = "ssh://git@" + addr + "/remote.git"
		cfg.Auth = Auth{SSHKeyFile: client.File(t, ""), KnownHostsFile: gittest.KnownHostsFile(t, addr, hostKey)}
		exerciseWire(t, f, cfg)
	})

	t.Run("encrypted key", func(t *testing.T) {
		cfg := f.config(t)
		cfg.URL = "ssh://git@" + addr + "/remote.git"
		cfg.Auth = Auth{
			SSHKeyFile:           client.File(t, "key-passphrase"),
			SSHKeyPassphraseFile: writeSecret(t, "key-passphrase"),
			KnownHostsFile:       gittest.KnownHostsFile(t, addr, hostKey),
		}
		if _, err := Open(ctxT(t), cfg); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("unknown host key is refused", func(t *testing.T) {
		cfg := f.config(t)
		cfg.URL = "ssh://git@" + addr + "/remote.git"
		cfg.Auth = Auth{SSHKeyFile: client.File(t, ""), KnownHostsFile: gittest.KnownHostsFile(t, addr, gittest.NewSSHKey(t).Signer.PublicKey())}
		if _, err := Open(ctxT(t), cfg); err == nil {
			t.Fatal("connected to a server whose host key is not in known_hosts")
		}
	})

	t.Run("unknown client key", func(t *testing.T) {
		cfg := f.config(t)
		cfg.URL = "ssh://git@" + addr + "/remote.git"
		cfg.Auth = Auth{SSHKeyFile: gittest.NewSSHKey(t).File(t, ""), KnownHostsFile: gittest.KnownHostsFile(t, addr, hostKey)}
		if _, err := Open(ctxT(t), cfg); !errors.Is(err, ErrAuth) {
			t.Fatalf("Open with an unknown client key: %v, want ErrAuth", err)
		}
	})
}

func TestAuthErrors(t *testing.T) {
	httpsEP := mustEndpoint(t, "https://example.com/fleet.git")
	sshEP := mustEndpoint(t, "git@example.com:org/fleet.git")
	garbage := writeSecret(t, "-----BEGIN OPENSSH PRIVATE KEY-----\nnot-a-key-but-secret-material\n-----END OPENSSH PRIVATE KEY-----")
	big := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(big, bytes.Repeat([]byte("x"), maxSecretSize+1), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GITSOURCE_EMPTY", "")

	for _, tc := range []struct {
		name   string
		auth   Auth
		ep     string
		want   error
		inText string
	}{
		{"token and password", Auth{TokenEnv: "X", PasswordEnv: "Y"}, "https", ErrInvalid, "either"},
		{"password without user", Auth{PasswordFile: writeSecret(t, "pw")}, "https", ErrInvalid, "username"},
		{"unset token env", Auth{TokenEnv: "GITSOURCE_EMPTY"}, "https", ErrInvalid, "GITSOURCE_EMPTY"},
		{"missing token file", Auth{TokenFile: "/nonexistent/token"}, "https", ErrInvalid, "/nonexistent/token"},
		{"empty token file", Auth{TokenFile: writeSecret(t, "")}, "https", ErrInvalid, "empty"},
		{"oversize token file", Auth{TokenFile: big}, "https", ErrTooLarge, big},
		{"missing CA file", Auth{CAFile: "/nonexistent/ca.pem"}, "https", ErrInvalid, "/nonexistent/ca.pem"},
		{"missing key file", Auth{SSHKeyFile: "/nonexistent/id"}, "ssh", ErrInvalid, "/nonexistent/id"},
		{"garbage key", Auth{SSHKeyFile: garbage}, "ssh", ErrInvalid, garbage},
		{"missing known_hosts", Auth{SSHKeyFile: gittest.NewSSHKey(t).File(t, ""), KnownHostsFile: "/nonexistent/kh"}, "ssh", ErrInvalid, "/nonexistent/kh"},
	} {
		ep := httpsEP
		if tc.ep == "ssh" {
			ep = sshEP
		}
		_, err := tc.auth.resolve(ep, &redactor{})
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.inText) {
			t.Errorf("%s: %v; want %v mentioning %q", tc.name, err, tc.want, tc.inText)
		}
		if err != nil && strings.Contains(err.Error(), "secret-material") {
			t.Errorf("%s: error quotes the key file: %v", tc.name, err)
		}
	}
}

func TestNormaliseURL(t *testing.T) {
	wd, _ := os.Getwd()
	for in, want := range map[string]string{
		"git@github.com:org/fleet.git":     "git@github.com:org/fleet.git",
		"ssh://git@github.com/org/fleet":   "ssh://git@github.com/org/fleet",
		"https://github.com/org/fleet.git": "https://github.com/org/fleet.git",
		"/srv/fleet.git":                   "file:///srv/fleet.git",
		"file:///srv/fleet.git":            "file:///srv/fleet.git",
		"fleet.git":                        "file://" + filepath.Join(wd, "fleet.git"),
		"  https://github.com/org/fleet  ": "https://github.com/org/fleet",
	} {
		got, _, err := normaliseURL(in, &redactor{})
		if err != nil || got != want {
			t.Errorf("normaliseURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	_, ep, _ := normaliseURL("git@github.com:org/fleet.git", &redactor{})
	if ep.Protocol != "ssh" || ep.User != "git" || ep.Host != "github.com" {
		t.Errorf("scp-style endpoint = %+v", ep)
	}
}
