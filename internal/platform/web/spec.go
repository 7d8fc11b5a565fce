package web

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/baton-agent/baton/internal/platform"
)

// DefaultListen is where the web chat listens unless told otherwise.
const DefaultListen = "127.0.0.1:7878"

// Section is the web: section of config.yaml.
type Section struct {
	// Enabled is true unless set to false.
	Enabled *bool `yaml:"enabled"`
	// Listen is the address to serve on; it must be a loopback address
	// unless AllowRemote is set. Default 127.0.0.1:7878.
	Listen      string `yaml:"listen"`
	AllowRemote bool   `yaml:"allow_remote"`
	// TLSCert and TLSKey serve the page over HTTPS.
	TLSCert string `yaml:"tls_cert"`
	TLSKey  string `yaml:"tls_key"`
	// TLSProxy says TLS ends at a reverse proxy in front of baton: the
	// page is served plainly to it, and the cookie is HTTPS-only.
	TLSProxy bool `yaml:"tls_proxy"`
	// SignIn is how long a browser stays signed in; 0: 30 days.
	SignIn time.Duration `yaml:"sign_in"`
}

// secure reports whether people reach the page over HTTPS.
func (s Section) secure() bool { return s.TLSCert != "" || s.TLSProxy }

// On reports whether the web chat is enabled (the default).
func (s Section) On() bool { return s.Enabled == nil || *s.Enabled }

// Addr is the listen address with the default filled in.
func (s Section) Addr() string {
	if s.Listen == "" {
		return DefaultListen
	}
	return s.Listen
}

// Check refuses a listen address that is not host:port, or not loopback
// without allow_remote.
func (s Section) Check() error {
	host, _, err := net.SplitHostPort(s.Addr())
	switch {
	case err != nil:
		return fmt.Errorf("web.listen %q: want host:port, e.g. %s", s.Listen, DefaultListen)
	case !s.AllowRemote && !isLoopback(host):
		return fmt.Errorf("web.listen %q is not a loopback address; set web.allow_remote: true if you mean it", s.Listen)
	case (s.TLSCert == "") != (s.TLSKey == ""):
		return errors.New("web: tls_cert and tls_key go together")
	case !isLoopback(host) && !s.secure():
		// The token and the sign-in would cross the network in clear.
		return fmt.Errorf("web.listen %q is remote but not over HTTPS: set web.tls_cert and web.tls_key, or web.tls_proxy: true if a reverse proxy in front ends TLS", s.Listen)
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Spec registers the web chat: on unless its section says enabled: false,
// trusted (its token is the owner's key), with its home conversation as
// the default home.
func Spec() platform.Spec {
	return platform.Spec{
		Name:        Name,
		Display:     "the web chat",
		Trusted:     true,
		Shared:      true,
		DefaultHome: Home.Key(),
		Open:        open,
	}
}

func open(_ context.Context, s platform.Setup) (platform.Adapter, error) {
	var sec Section
	if err := s.DecodeSection(&sec); err != nil {
		return nil, err
	}
	if !sec.On() {
		return nil, platform.ErrNotConfigured
	}
	if err := sec.Check(); err != nil {
		return nil, err
	}
	if s.Transcripts == nil {
		return nil, errors.New("web chat: no transcripts to show (the gateway offers them)")
	}
	tok, err := LoadToken(s.Home)
	if err != nil {
		return nil, err
	}
	spool, err := prepareSpool(filepath.Join(s.Home, SpoolFolder))
	if err != nil {
		return nil, err
	}
	return New(Config{Listen: sec.Addr(), Token: tok, TLSCert: sec.TLSCert, TLSKey: sec.TLSKey, Secure: sec.secure(),
		SignIn: sec.SignIn, Transcripts: s.Transcripts, Log: s.Log, SpoolDir: spool, MaxFile: s.MaxFile})
}

// SpoolFolder is the folder inside BATON_HOME where a file the page sends
// waits while the gateway stores it.
const SpoolFolder = "web-uploads"

// prepareSpool makes the spool folder, private, and removes what a gateway
// stopped mid-upload left in it (the page sends those again).
func prepareSpool(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("web chat: make the upload folder: %w", err)
	}
	left, err := filepath.Glob(filepath.Join(dir, spoolPattern))
	if err != nil {
		return "", err
	}
	for _, f := range left {
		_ = os.Remove(f)
	}
	return dir, nil
}

// conversations lists the page's conversations, most recently active
// first, with the home conversation always there and titled Home.
func (a *Adapter) conversations(ctx context.Context) ([]Conversation, error) {
	items, err := a.cfg.Transcripts.Conversations(ctx, Name)
	if err != nil {
		return nil, err
	}
	out := []Conversation{{Key: Home.Key(), Title: "Home"}}
	for _, c := range items {
		if c.Key == Home.Key() {
			out[0].Updated = c.Updated
			continue
		}
		out = append(out, c)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Updated.After(out[j].Updated) })
	return out, nil
}
