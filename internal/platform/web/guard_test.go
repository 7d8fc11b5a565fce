package web

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/testutil"
)

func run(t *testing.T, cfg Config) *Adapter {
	t.Helper()
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	cfg.Token, cfg.Transcripts = testToken, staticTranscripts{}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- a.Run(ctx, platform.ReceiverFunc(func(context.Context, platform.Event) error { return nil }))
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return a
}

func get(t *testing.T, c *http.Client, u string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// The token in the address signs a browser in on the page itself and
// nowhere else; the sign-in is a cookie that does not carry the token and
// expires.
func TestTokenOnlySignsIn(t *testing.T) {
	a := run(t, Config{SignIn: time.Hour})
	base := "http://" + a.Addr()
	for _, u := range []string{base + "/ws?token=" + testToken, base + "/static/app.js?token=" + testToken} {
		if resp, _ := get(t, http.DefaultClient, u); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s = %d, want 401: the token counts only when signing in", u, resp.StatusCode)
		}
	}
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	resp, _ := get(t, browser, a.URL())
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("sign in: %d", resp.StatusCode)
	}
	var signIn *http.Cookie
	for _, c := range resp.Request.Response.Cookies() {
		if c.Name == cookieName {
			signIn = c
		}
	}
	if signIn == nil {
		t.Fatal("no sign-in cookie")
	}
	if strings.Contains(signIn.Value, testToken) || signIn.MaxAge != 3600 || !signIn.HttpOnly || signIn.Secure {
		t.Errorf("cookie %+v: want no token in it, Max-Age 3600, HttpOnly, not Secure over plain loopback HTTP", signIn)
	}
	if resp, _ := get(t, browser, base+"/static/app.js"); resp.StatusCode != http.StatusOK {
		t.Errorf("signed in: app.js %d", resp.StatusCode)
	}
	// An expired or forged sign-in is refused, saying why.
	if ok, why := a.signedIn(a.signIn(time.Now().Add(-2*time.Hour)), time.Now()); ok || !strings.Contains(why, "expired") {
		t.Errorf("expired sign-in: %v %q", ok, why)
	}
	forged := []byte(signIn.Value)
	forged[len(forged)-1] ^= 1 // another hex digit
	if ok, _ := a.signedIn(string(forged), time.Now()); ok {
		t.Error("a forged sign-in was accepted")
	}
	later := strings.Replace(signIn.Value, signIn.Value[:10], "9999999999", 1)
	if ok, _ := a.signedIn(later, time.Now()); ok {
		t.Error("a sign-in with its expiry moved was accepted")
	}
	old := &http.Request{Header: http.Header{"Cookie": {cookieName + "=" + a.signIn(time.Now().Add(-2*time.Hour))}}}
	if ok, why := a.authorized(old); ok || why != "your sign-in expired" {
		t.Errorf("expired cookie: %v %q", ok, why)
	}
	// A sign-in made with another token is worth nothing here.
	other := &Adapter{cfg: Config{Token: "another-token-another-token", SignIn: time.Hour}}
	if ok, _ := a.signedIn(other.signIn(time.Now()), time.Now()); ok {
		t.Error("a sign-in of another token was accepted")
	}
}

// Over TLS the cookie is Secure and the address is https.
func TestTLSMakesTheCookieSecure(t *testing.T) {
	cert, key := selfSigned(t)
	a := run(t, Config{TLSCert: cert, TLSKey: key})
	if !strings.HasPrefix(a.URL(), "https://") {
		t.Fatalf("URL %s", a.URL())
	}
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, _ := get(t, browser, a.URL())
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("sign in over TLS: %d", resp.StatusCode)
	}
	cookies := resp.Request.Response.Cookies()
	if len(cookies) != 1 || !cookies[0].Secure {
		t.Errorf("cookies %+v, want one Secure", cookies)
	}
	if resp, _ := get(t, http.DefaultClient, "http://"+a.Addr()+"/"); resp.StatusCode == http.StatusOK {
		t.Error("the page answered plain HTTP")
	}
}

// Pages beyond the bound are refused with the reason; closing one makes
// room.
func TestPagesAreBounded(t *testing.T) {
	a := run(t, Config{MaxPages: 2})
	hdr := http.Header{"Authorization": {"Bearer " + testToken}}
	var open []*websocket.Conn
	for range 2 {
		c, _, err := websocket.Dial(testutil.Context(t, 0), "ws://"+a.Addr()+"/ws", &websocket.DialOptions{HTTPHeader: hdr})
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, c)
		if f := roundTrip(t, c, `{"type":"list"}`); f.Type != "conversations" {
			t.Fatalf("list: %+v", f)
		}
	}
	_, resp, err := websocket.Dial(testutil.Context(t, 0), "ws://"+a.Addr()+"/ws", &websocket.DialOptions{HTTPHeader: hdr})
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("third page: %v %v", resp, err)
	}
	open[0].Close(websocket.StatusNormalClosure, "")
	testutil.Eventually(t, testutil.Patience, func() bool {
		c, _, err := websocket.Dial(testutil.Context(t, 0), "ws://"+a.Addr()+"/ws", &websocket.DialOptions{HTTPHeader: hdr})
		if err != nil {
			return false
		}
		c.Close(websocket.StatusNormalClosure, "")
		return true
	}, "a closed page to make room")
	open[1].Close(websocket.StatusNormalClosure, "")
}

// Ids, keys and texts past their bounds are refused with the reason,
// before anything reaches the gateway.
func TestSayBounds(t *testing.T) {
	var got []platform.Event
	_, conn := start(t, func(_ context.Context, ev platform.Event) error {
		got = append(got, ev)
		return nil
	})
	long := strings.Repeat("k", MaxKey)
	cases := []struct{ in, want string }{
		{`{"type":"say","key":"web:dm:main","text":"x","id":"` + strings.Repeat("i", MaxID+1) + `"}`, "message id too long"},
		{`{"type":"say","key":"web:thread:main:` + long + `","text":"x","id":"1"}`, "conversation key too long"},
		{`{"type":"open","key":"web:thread:main:` + long + `"}`, "conversation key too long"},
		{`{"type":"say","key":"web:dm:main","id":"2","text":"` + strings.Repeat("x", MaxText+1) + `"}`, "message too long"},
	}
	for _, c := range cases {
		f := roundTrip(t, conn, c.in)
		if f.Type != "error" || !strings.Contains(f.Error, c.want) {
			t.Errorf("%.60s… → %+v, want error containing %q", c.in, f.Error, c.want)
		}
	}
	if len(got) != 0 {
		t.Errorf("oversized messages reached the gateway: %d", len(got))
	}
}

func selfSigned(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "baton test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// A browser without a valid sign-in gets a page (401) that says why and
// how to sign in; programs asking for the websocket or a file still get
// a plain 401.
func TestSignInPageSaysWhyAndHow(t *testing.T) {
	a := run(t, Config{SignIn: time.Hour})
	base := "http://" + a.Addr()
	expired := &http.Request{Method: http.MethodGet, Header: http.Header{"Cookie": {cookieName + "=" + a.signIn(time.Now().Add(-2*time.Hour))}}}
	cases := []struct {
		name, url string
		req       *http.Request
		want      string
	}{
		{"no sign-in", base + "/", nil, "This browser is not signed in."},
		{"expired", base + "/", expired, "Your sign-in has expired."},
		{"wrong token", base + "/?token=not-the-token-at-all", nil, "That token is not this gateway&#39;s"},
	}
	for _, c := range cases {
		req, _ := http.NewRequest(http.MethodGet, c.url, nil)
		if c.req != nil {
			req.Header = c.req.Header
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body := string(b)
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			t.Errorf("%s: %d %s, want a 401 page", c.name, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		for _, want := range []string{c.want, "?token=", "$BATON_HOME/" + TokenFile, `<form method="get" action="/">`} {
			if !strings.Contains(body, want) {
				t.Errorf("%s: the page does not say %q", c.name, want)
			}
		}
		if strings.Contains(body, testToken) {
			t.Errorf("%s: the page shows the token", c.name)
		}
	}
	// Its style is served without a sign-in; nothing else is.
	if resp, _ := get(t, http.DefaultClient, base+"/signin.css"); resp.StatusCode != http.StatusOK {
		t.Errorf("signin.css %d", resp.StatusCode)
	}
	for _, u := range []string{base + "/static/style.css", base + "/static/app.js", base + "/ws"} {
		resp, body := get(t, http.DefaultClient, u)
		if resp.StatusCode != http.StatusUnauthorized || strings.Contains(body, "<html") {
			t.Errorf("GET %s = %d: want a plain 401", u, resp.StatusCode)
		}
	}
}

// The sign-in cookie is persistent (Max-Age and Expires), so it outlives
// a browser restart.
func TestSignInCookieIsPersistent(t *testing.T) {
	a := run(t, Config{})
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, _ := get(t, client, a.URL())
	cs := resp.Cookies()
	if len(cs) != 1 {
		t.Fatalf("cookies %+v", cs)
	}
	c := cs[0]
	if c.MaxAge != int(DefaultSignIn/time.Second) || time.Until(c.Expires) < DefaultSignIn-time.Minute || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
		t.Errorf("cookie %+v: want Max-Age and Expires 30 days ahead, HttpOnly, SameSite=Strict", c)
	}
}

// No other page may frame the chat (its Approve buttons could be
// clickjacked): every answer, the signed-in page, the sign-in page, its
// files and a refusal alike, forbids framing both ways browsers read it,
// and keeps the rest of the policy.
func TestNoPageMayFrameTheChat(t *testing.T) {
	a := run(t, Config{})
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	base := "http://" + a.Addr()
	for _, u := range []string{base + "/", base + "/signin.css", base + "/static/app.js", base + "/ws", a.URL(), base + "/", base + "/static/style.css"} {
		resp, _ := get(t, browser, u)
		if got := resp.Header.Get("X-Frame-Options"); got != "DENY" {
			t.Errorf("GET %s (%d): X-Frame-Options %q, want DENY", u, resp.StatusCode, got)
		}
		csp := resp.Header.Values("Content-Security-Policy")
		if len(csp) != 1 {
			t.Fatalf("GET %s: %d Content-Security-Policy headers, want one: %q", u, len(csp), csp)
		}
		directives := map[string]string{}
		for _, d := range strings.Split(csp[0], ";") {
			name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
			directives[name] = value
		}
		for name, want := range map[string]string{"frame-ancestors": "'none'", "default-src": "'self'", "connect-src": "'self'", "img-src": "'self' data: blob:"} {
			if directives[name] != want {
				t.Errorf("GET %s: CSP %s is %q, want %q (policy %q)", u, name, directives[name], want, csp[0])
			}
		}
	}
}
