// Package web is baton's built-in web chat: a page served on loopback,
// guarded by a random token, that talks to the gateway over a websocket.
// Each handoff into the web opens a new conversation in the page; the page
// shows a conversation's whole transcript and streams replies as they are
// written.
package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/baton-agent/baton/internal/platform"
)

// Name is the platform name.
const Name = "web"

// Owner is the sender id of everything typed into the page: whoever holds
// the token is the owner.
const Owner = "owner"

// HomeChat is the chat of the page's home conversation; Home is its address.
const HomeChat = "main"

// Home is where the page starts and where handoffs land by default.
var Home = platform.Address{Platform: Name, Kind: platform.DM, Chat: HomeChat}

// TokenFile is the token's file name inside BATON_HOME.
const TokenFile = "web-token"

const cookieName = "baton_token"

//go:embed static
var static embed.FS

// Conversation is one conversation the page lists.
type Conversation = platform.Conversation

// Line is one transcript entry as the page shows it.
type Line = platform.Line

// Bounds on what a page may do; each refusal says which was passed.
const (
	// DefaultMaxPages is how many pages may be open at once.
	DefaultMaxPages = 16
	// DefaultSignIn is how long a sign-in (the cookie) lasts.
	DefaultSignIn = 30 * 24 * time.Hour
	// MaxText is the most a person may say in one message, in bytes.
	MaxText = 64 << 10
	// MaxID and MaxKey bound a message id and a conversation key.
	MaxID  = 128
	MaxKey = 256
	// PageQueue is how many frames wait for one page at most; a message
	// finding every page's queue full is not delivered (the gateway tries
	// it again), and a live update (a delta) is skipped for that page.
	PageQueue = 256
	// PageWork is how many frames of one page wait to be handled in order
	// (messages said, conversations opened); past it, reading the page
	// waits.
	PageWork = 32
	// DefaultAckWait is how long a message waits for a page to say it
	// showed it.
	DefaultAckWait = 5 * time.Second
)

// Why a message was not delivered; the gateway tries it again.
var (
	errNoPage      = errors.New("no web chat page is open")
	errPagesBehind = errors.New("every open web chat page is behind (its queue is full)")
	errNotShown    = errors.New("no web chat page said it showed the message")
	errAskerBehind = errors.New("the web chat page that asked is behind (its queue is full)")
)

// Config sets up the web chat.
type Config struct {
	Listen string // host:port; port 0 picks one
	Token  string // required; see LoadToken
	// TLSCert and TLSKey, if set, serve the page over HTTPS.
	TLSCert, TLSKey string
	// Secure says people reach the page over HTTPS (TLS here, or at a
	// reverse proxy in front): the cookie is then sent only over HTTPS.
	Secure bool
	// MaxPages bounds open pages; 0: DefaultMaxPages.
	MaxPages int
	// SignIn is how long a sign-in lasts; 0: DefaultSignIn.
	SignIn time.Duration
	// AckWait is how long Send waits for a page to say it showed a
	// message; 0: DefaultAckWait.
	AckWait time.Duration
	// MaxFile bounds each file, in bytes, the page sends or is sent;
	// 0: DefaultMaxFile.
	MaxFile int64
	// SpoolDir is where a file the page sends waits while the gateway
	// stores it; "": the system's temporary directory.
	SpoolDir string
	// Transcripts gives the page what lives in the store: the
	// conversations and their transcripts (with their files, when it is
	// also a FileTranscripts).
	Transcripts platform.Transcripts
	Log         *slog.Logger
}

// Adapter is the web chat platform.
type Adapter struct {
	cfg  Config
	addr string // where the page is served, resolved once
	log  *slog.Logger
	// ackTimeout is when a Send stops waiting for a page: time.After, or
	// a test's own signal.
	ackTimeout func(time.Duration) <-chan time.Time

	mu      sync.Mutex
	ln      net.Listener // nil after a failure closed it
	clients map[*client]bool
	recv    platform.Receiver
	// shown holds each message sent and not yet acknowledged.
	shown map[string]*waiter
	// What is remembered of tabs, each bounded by maxRemembered. A tab is
	// a page's id that outlives its reconnections (and reloads).
	// askers: conversation key → the tab that said something there last,
	// whose acknowledgement a message to that conversation waits for.
	askers map[string]string
	// missed: tab → messages for it that another page showed while it was
	// away; sent to it when it connects, until it acknowledges them.
	missed map[string][]frame
	// questions: conversation key → the approval question waiting for an
	// answer there, shown to every page that opens the conversation.
	questions map[string]frame
	// streams holds the reply being written in each conversation, so each
	// delta can carry it whole, rendered; Send ends it.
	streams map[string]*strings.Builder
	// served: message id → a file sent to the page, for it to fetch.
	served map[string]served
}

var (
	_ platform.Adapter       = (*Adapter)(nil)
	_ platform.Threader      = (*Adapter)(nil)
	_ platform.Streamer      = (*Adapter)(nil)
	_ platform.Typer         = (*Adapter)(nil)
	_ platform.MessageSender = (*Adapter)(nil)
	_ platform.FileSender    = (*Adapter)(nil)
)

// New listens on cfg.Listen at once, so URL is known before Run.
func New(cfg Config) (*Adapter, error) {
	if len(cfg.Token) < 16 {
		return nil, errors.New("web: a token of at least 16 characters is required")
	}
	if cfg.Transcripts == nil {
		return nil, errors.New("web: Transcripts are required")
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.MaxPages <= 0 {
		cfg.MaxPages = DefaultMaxPages
	}
	if cfg.SignIn <= 0 {
		cfg.SignIn = DefaultSignIn
	}
	if cfg.AckWait <= 0 {
		cfg.AckWait = DefaultAckWait
	}
	if cfg.MaxFile <= 0 {
		cfg.MaxFile = DefaultMaxFile
	}
	if (cfg.TLSCert == "") != (cfg.TLSKey == "") {
		return nil, errors.New("web chat: tls_cert and tls_key go together")
	}
	if cfg.TLSCert != "" {
		cfg.Secure = true
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("web chat: listen on %s: %w (set web.listen in config.yaml to another port)", cfg.Listen, err)
	}
	return &Adapter{cfg: cfg, ln: ln, addr: ln.Addr().String(), log: cfg.Log, ackTimeout: time.After, clients: map[*client]bool{}, shown: map[string]*waiter{},
		askers: map[string]string{}, missed: map[string][]frame{}, questions: map[string]frame{}, streams: map[string]*strings.Builder{}, served: map[string]served{}}, nil
}

// LoadToken reads the token kept in home, creating it (mode 0600) on first use.
func LoadToken(home string) (string, error) {
	path := filepath.Join(home, TokenFile)
	b, err := os.ReadFile(path)
	if err == nil && len(strings.TrimSpace(string(b))) >= 16 {
		return strings.TrimSpace(string(b)), nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("read web token: %w", err)
	}
	raw := make([]byte, 24)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	tok := hex.EncodeToString(raw)
	if err := os.MkdirAll(home, 0o700); err != nil {
		return "", err
	}
	if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write web token: %w", err)
	}
	return tok, nil
}

// Name is "web".
func (a *Adapter) Name() string { return Name }

// Addr is the address the page is served on.
func (a *Adapter) Addr() string { return a.addr }

// Link is the page's address with its token (the page shows the
// conversation a handoff brought there at once).
func (a *Adapter) Link(platform.Address) string { return a.URL() }

// URL is the page's address with its token: keep it private. The token
// signs a browser in once; the address bar then drops it.
func (a *Adapter) URL() string {
	scheme := "http"
	if a.cfg.Secure {
		scheme = "https"
	}
	return scheme + "://" + a.addr + "/?token=" + url.QueryEscape(a.cfg.Token)
}

// Run serves the page until ctx ends. After a failure it is restarted on
// the same address.
func (a *Adapter) Run(ctx context.Context, r platform.Receiver) error {
	ln, err := a.listener()
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.recv = r
	a.mu.Unlock()
	// Pages are not cut off when ctx ends: closeClients lets each finish
	// what is queued for it first.
	srv := &http.Server{Handler: a.routes(), ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) }}
	errc := make(chan error, 1)
	go func() {
		if a.cfg.TLSCert != "" {
			errc <- srv.ServeTLS(ln, a.cfg.TLSCert, a.cfg.TLSKey)
			return
		}
		errc <- srv.Serve(ln)
	}()
	r.Live()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		a.closeClients()
		return nil
	case err := <-errc:
		a.mu.Lock()
		a.ln = nil // closed by Serve; the next Run listens again
		a.mu.Unlock()
		a.closeClients()
		return fmt.Errorf("web chat: %w", err)
	}
}

// listener is the one New opened, or a new one on the same address after
// a failure closed it.
func (a *Adapter) listener() (net.Listener, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ln != nil {
		return a.ln, nil
	}
	ln, err := net.Listen("tcp", a.addr)
	if err != nil {
		return nil, fmt.Errorf("web chat: listen on %s: %w", a.addr, err)
	}
	a.ln = ln
	return ln, nil
}

func (a *Adapter) routes() http.Handler {
	mux := http.NewServeMux()
	sub, _ := fs.Sub(static, "static")
	files := http.FileServerFS(sub)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		if tok := r.URL.Query().Get("token"); tok != "" {
			if !a.tokenOK(tok) {
				a.signInPage(w, "That token is not this gateway's (a new one is made when its file is deleted).")
				return
			}
			// The token signs in once: the browser keeps a sign-in that
			// expires, and the token leaves the address bar and history.
			// Max-Age and Expires make it a persistent cookie, so the
			// sign-in outlives a browser restart.
			now := time.Now()
			http.SetCookie(w, &http.Cookie{Name: cookieName, Value: a.signIn(now), Path: "/",
				MaxAge: int(a.cfg.SignIn / time.Second), Expires: now.Add(a.cfg.SignIn).UTC(),
				HttpOnly: true, Secure: a.cfg.Secure, SameSite: http.SameSiteStrictMode})
			http.Redirect(w, r, "/", http.StatusSeeOther)
			return
		}
		if ok, why := a.authorized(r); !ok {
			a.signInPage(w, why)
			return
		}
		files.ServeHTTP(w, r)
	})
	// The sign-in page's style is all that is served without a sign-in.
	mux.HandleFunc("GET /signin.css", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, sub, "signin.css")
	})
	mux.HandleFunc("GET /static/", func(w http.ResponseWriter, r *http.Request) {
		if ok, why := a.authorized(r); !ok {
			a.unauthorized(w, why)
			return
		}
		http.StripPrefix("/static", files).ServeHTTP(w, r)
	})
	mux.HandleFunc("GET /ws", func(w http.ResponseWriter, r *http.Request) {
		if ok, why := a.authorized(r); !ok {
			a.unauthorized(w, why)
			return
		}
		a.serveWS(w, r)
	})
	mux.HandleFunc("POST /upload", func(w http.ResponseWriter, r *http.Request) {
		if ok, why := a.authorized(r); !ok {
			a.unauthorized(w, why)
			return
		}
		if !sameOrigin(r) {
			http.Error(w, "403: an upload comes from the chat's own page", http.StatusForbidden)
			return
		}
		a.serveUpload(w, r)
	})
	mux.HandleFunc("GET /file/{ref}", func(w http.ResponseWriter, r *http.Request) {
		if ok, why := a.authorized(r); !ok {
			a.unauthorized(w, why)
			return
		}
		a.serveFile(w, r)
	})
	return securityHeaders(mux)
}

// contentPolicy is the page's Content-Security-Policy. frame-ancestors
// 'none' (and X-Frame-Options for older browsers) keeps any other page,
// one on another local port included, from framing the chat to trick a
// click on its Approve buttons.
// img-src blob: shows a picture the person attached from the browser's
// own copy before it is sent.
const contentPolicy = "default-src 'self'; connect-src 'self'; img-src 'self' data: blob:; frame-ancestors 'none'"

func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", contentPolicy)
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		w.Header().Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	})
}

func (a *Adapter) tokenOK(tok string) bool {
	return subtle.ConstantTimeCompare([]byte(tok), []byte(a.cfg.Token)) == 1
}

// authorized accepts a signed-in browser's cookie, or the token in an
// Authorization header (for programs; it never shows in an address). A
// token in the address counts only on the sign-in page itself.
func (a *Adapter) authorized(r *http.Request) (bool, string) {
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && a.tokenOK(tok) {
		return true, ""
	}
	c, err := r.Cookie(cookieName)
	if err != nil {
		return false, "not signed in"
	}
	return a.signedIn(c.Value, time.Now())
}

// signIn is the cookie value of a sign-in at now: its expiry and a MAC
// keyed by the token, so it proves the token was shown without carrying
// it, and a new token ends every sign-in.
func (a *Adapter) signIn(now time.Time) string {
	exp := strconv.FormatInt(now.Add(a.cfg.SignIn).Unix(), 10)
	return exp + "." + a.mac(exp)
}

func (a *Adapter) mac(exp string) string {
	m := hmac.New(sha256.New, []byte(a.cfg.Token))
	m.Write([]byte("baton web sign-in\x00" + exp))
	return hex.EncodeToString(m.Sum(nil))
}

func (a *Adapter) signedIn(v string, now time.Time) (bool, string) {
	exp, sum, ok := strings.Cut(v, ".")
	if !ok || !hmac.Equal([]byte(sum), []byte(a.mac(exp))) {
		return false, "not signed in"
	}
	t, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || now.Unix() >= t {
		return false, "your sign-in expired"
	}
	return true, ""
}

// signInPage answers a browser that is not signed in with a page that
// says why and how to sign in, with status 401.
func (a *Adapter) signInPage(w http.ResponseWriter, why string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = io.WriteString(w, signInPageFor(why))
}

func (a *Adapter) unauthorized(w http.ResponseWriter, why string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusUnauthorized)
	fmt.Fprintf(w, "401: this is baton's web chat, and %s. Open the address `baton gateway` printed (it carries the access token), or see `baton gateway status`.\n", why)
}

// Send shows an assistant message in every open page, and succeeds once a
// page says it showed it: the tab that said something in the conversation
// last (it asked, so it must see the answer) if it is open, else any page;
// the tab that asked, when it comes back, is sent what it missed. (Should
// the tab that asked stay silent for Config.AckWait while another page
// showed the message, that counts.) With no
// page open it fails as platform.Away (the gateway keeps it until a page
// connects: see Redeliver); when every page (or the one that asked) is
// behind, or the page it waits for does not answer within Config.AckWait,
// it fails to be tried again. Each try of a stored delivery carries the
// same id, so a page shows it once however often it is sent. Send's text
// is an ordinary answer: see SendMessage for the kinds the page shows
// otherwise.
func (a *Adapter) Send(ctx context.Context, to platform.Address, text string) (string, error) {
	return a.SendMessage(ctx, to, platform.Message{Text: text})
}

// SendMessage is Send knowing what the message is: an approval question
// comes with what the page needs to offer its answers as buttons, and is
// shown to every page that opens the conversation until it is answered or
// expires; an elsewhere line makes the page mark what was said meanwhile
// as kept. Both are read from the message's kind and data.
func (a *Adapter) SendMessage(ctx context.Context, to platform.Address, m platform.Message) (string, error) {
	f := messageFrame(ctx, to, m)
	a.mu.Lock()
	delete(a.streams, to.Key())
	a.mu.Unlock()
	return a.deliver(ctx, to, f)
}

// Mirror shows m, which another gateway replica sent to the pages
// connected there, on every page connected here (platform.Mirror): a
// person's tabs may each be on another replica. Nothing waits for the
// pages: the replica that sent it already did.
func (a *Adapter) Mirror(ctx context.Context, to platform.Address, m platform.Message) {
	f := messageFrame(ctx, to, m)
	a.mu.Lock()
	defer a.mu.Unlock()
	for c := range a.clients {
		c.send(f)
	}
}

// messageFrame is the frame showing m at to.
func messageFrame(ctx context.Context, to platform.Address, m platform.Message) frame {
	f := frame{Type: "message", Key: to.Key(), Role: "assistant", Text: m.Text, HTML: renderMarkdown(m.Text), ID: messageID(ctx, to), At: time.Now().UnixMilli()}
	switch m.Kind {
	case platform.MessageApproval:
		f.Approval = &approval{Tool: m.Approval.Tool, Subject: m.Approval.Subject}
	case platform.MessageApprovalExpired:
		f.Approval = &approval{Tool: m.Approval.Tool, Expired: true}
	case platform.MessageElsewhere:
		f.Elsewhere = true
	}
	return f
}

// deliver shows the message f in every open page and waits until the
// page that counts said it showed it (see Send).
func (a *Adapter) deliver(ctx context.Context, to platform.Address, f frame) (string, error) {
	id := f.ID
	shown := make(chan struct{})
	a.mu.Lock()
	if len(a.clients) == 0 {
		a.mu.Unlock()
		return "", platform.Away(fmt.Errorf("web: send: %w", errNoPage))
	}
	if _, dup := a.shown[id]; dup {
		// Another try of this message already waits for its page.
		a.mu.Unlock()
		return "", fmt.Errorf("web: send: message %s is being sent already", id)
	}
	a.rememberQuestion(to.Key(), f)
	asker := a.askers[to.Key()]
	w := &waiter{shown: shown}
	for c := range a.clients {
		if asker != "" && c.tab == asker {
			w.tab = asker // open: its acknowledgement is the one that counts
		}
	}
	a.shown[id] = w
	taken, askerTook := 0, false
	for c := range a.clients {
		if c.send(f) {
			taken++
			askerTook = askerTook || (w.tab != "" && c.tab == w.tab)
		}
	}
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.shown, id)
		a.mu.Unlock()
	}()
	if taken == 0 {
		return "", fmt.Errorf("web: send: %w", errPagesBehind)
	}
	if w.tab != "" && !askerTook {
		return "", fmt.Errorf("web: send: %w", errAskerBehind)
	}
	select {
	case <-shown:
		if asker != "" && w.tab == "" {
			// Another page showed it while the tab that asked was away;
			// should that tab have come back meanwhile, it is sent now.
			a.mu.Lock()
			a.rememberMissed(asker, f)
			for c := range a.clients {
				if c.tab == asker {
					c.send(f)
				}
			}
			a.mu.Unlock()
		}
		return id, nil
	case <-a.ackTimeout(a.cfg.AckWait):
		a.mu.Lock()
		defer a.mu.Unlock()
		if w.elsewhere {
			// The tab that asked is open but silent (a frozen background
			// tab): another page showed it, so the conversation goes on,
			// and the tab that asked gets it again when it reconnects.
			a.rememberMissed(asker, f)
			return id, nil
		}
		return "", fmt.Errorf("web: send: %w within %s", errNotShown, a.cfg.AckWait)
	case <-ctx.Done():
		return "", fmt.Errorf("web: send: %w", ctx.Err())
	}
}

// waiter is a message sent and waiting to be shown.
type waiter struct {
	shown     chan struct{} // closed when the page it waits for showed it
	tab       string        // that page's tab; "": any page
	elsewhere bool          // another page showed it
}

// maxRemembered bounds each of the adapter's memories of tabs, and
// maxMissed what is kept for one tab.
const (
	maxRemembered = 1024
	maxMissed     = 64
)

// makeRoom forgets one entry of m, any, when it is full, so it stays
// within maxRemembered.
func makeRoom[V any](m map[string]V, key string) {
	if _, ok := m[key]; ok || len(m) < maxRemembered {
		return
	}
	for k := range m {
		delete(m, k)
		return
	}
}

// rememberAsker notes that tab said something in the conversation key.
// a.mu is held.
func (a *Adapter) rememberAsker(key, tab string) {
	if tab == "" {
		return
	}
	makeRoom(a.askers, key)
	a.askers[key] = tab
}

// rememberMissed keeps f for tab until it acknowledges it. a.mu is held.
func (a *Adapter) rememberMissed(tab string, f frame) {
	makeRoom(a.missed, tab)
	list := a.missed[tab]
	for _, m := range list {
		if m.ID == f.ID {
			return
		}
	}
	if len(list) >= maxMissed {
		list = list[1:]
	}
	a.missed[tab] = append(list, f)
}

// rememberQuestion keeps an approval question to show to pages that open
// its conversation later, and forgets it when it expires. a.mu is held.
func (a *Adapter) rememberQuestion(key string, f frame) {
	switch {
	case f.Approval == nil:
	case f.Approval.Expired:
		delete(a.questions, key)
	default:
		makeRoom(a.questions, key)
		a.questions[key] = f
	}
}

// messageID is the id a message carries to the page: derived from the
// gateway's delivery key, so every try of one delivery has the same id
// (the page drops a repeat), or random for a message not stored.
func messageID(ctx context.Context, to platform.Address) string {
	key := platform.DeliveryKey(ctx)
	if key == "" {
		return "w" + newID()
	}
	sum := sha256.Sum256([]byte(to.Key() + "\x00" + key))
	return "d" + hex.EncodeToString(sum[:12])
}

// acknowledge is page c saying it showed message id.
func (a *Adapter) acknowledge(c *client, id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if w, ok := a.shown[id]; ok {
		if w.tab == "" || w.tab == c.tab {
			close(w.shown)
			delete(a.shown, id)
		} else {
			w.elsewhere = true
		}
	}
	if list, ok := a.missed[c.tab]; ok && c.tab != "" {
		list = slices.DeleteFunc(list, func(f frame) bool { return f.ID == id })
		if len(list) == 0 {
			delete(a.missed, c.tab)
		} else {
			a.missed[c.tab] = list
		}
	}
}

// redeliver asks the gateway to send at once what waits for at (a page
// connected, or opened a conversation).
func (a *Adapter) redeliver(at platform.Address) {
	a.mu.Lock()
	r, ok := a.recv.(platform.Redeliverer)
	a.mu.Unlock()
	if ok {
		r.Redeliver(at)
	}
}

// maxStreamRendered bounds the reply a delta carries rendered whole;
// past it, deltas carry only their piece, shown as text until the reply
// is finished.
const maxStreamRendered = 64 << 10

// Delta streams a piece of a reply being written: the page is sent the
// reply so far, rendered.
func (a *Adapter) Delta(ctx context.Context, at platform.Address, text string) error {
	a.mu.Lock()
	b := a.streams[at.Key()]
	if b == nil {
		b = &strings.Builder{}
		a.streams[at.Key()] = b
	}
	b.WriteString(text)
	so := ""
	if b.Len() <= maxStreamRendered {
		so = b.String()
	}
	a.mu.Unlock()
	f := frame{Type: "delta", Key: at.Key(), Text: text}
	if so != "" {
		f.HTML = renderMarkdown(so)
	}
	a.broadcast(ctx, f)
	return nil
}

// Typing shows that the agent is working.
func (a *Adapter) Typing(ctx context.Context, at platform.Address) error {
	a.broadcast(ctx, frame{Type: "typing", Key: at.Key()})
	return nil
}

// NewThread opens a new conversation in the page; open pages switch to it.
func (a *Adapter) NewThread(ctx context.Context, home platform.Address, title string) (platform.Address, error) {
	chat := home.Chat
	if chat == "" {
		chat = HomeChat
	}
	addr := platform.Address{Platform: Name, Kind: platform.Thread, Chat: chat, Thread: newID()}
	a.broadcast(ctx, frame{Type: "conversation", Key: addr.Key(), Title: title, Focus: true})
	return addr, nil
}

func newID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// frame is one websocket message, either way.
type frame struct {
	Type  string `json:"type"`
	Key   string `json:"key,omitempty"`
	ID    string `json:"id,omitempty"`
	Role  string `json:"role,omitempty"`
	Text  string `json:"text,omitempty"`
	HTML  string `json:"html,omitempty"` // Text rendered (renderMarkdown)
	At    int64  `json:"at,omitempty"`   // when it was sent, in Unix milliseconds
	Title string `json:"title,omitempty"`
	Focus bool   `json:"focus,omitempty"`
	Error string `json:"error,omitempty"`
	// Elsewhere marks a message saying the conversation is held in
	// another place: what the person said here meanwhile is kept (the
	// page marks it so at once; its history shows it once parked).
	Elsewhere bool `json:"elsewhere,omitempty"`
	// Approval marks an approval question, or the note that it expired.
	Approval *approval      `json:"approval,omitempty"`
	Lines    []pageLine     `json:"lines,omitempty"`
	Items    []Conversation `json:"items,omitempty"`
	// File is a file baton sent, shown with the message's text as its
	// caption; Files are those the person sent with what they said.
	File  *pageFile  `json:"file,omitempty"`
	Files []pageFile `json:"files,omitempty"`
	// MaxFile is the per-file bound, told with the conversations, so the
	// page refuses a file over it before sending it.
	MaxFile int64 `json:"max_file,omitempty"`
}

type approval struct {
	Tool    string `json:"tool"`
	Subject string `json:"subject,omitempty"`
	Expired bool   `json:"expired,omitempty"`
}

// maxFrame bounds what a page may send in one message.
const maxFrame = 1 << 20

type client struct {
	tab     string // the page's tab (see Adapter.askers); "" from a page that gives none
	conn    *websocket.Conn
	out     chan frame
	closing chan struct{} // closed by closeClients: send what is queued, then close
	once    sync.Once
	done    chan struct{} // closed when the writer has ended
}

func (a *Adapter) serveWS(w http.ResponseWriter, r *http.Request) {
	// Hold a place before accepting, so a flood of pages is refused with
	// a reason instead of taking memory.
	c := &client{out: make(chan frame, PageQueue), closing: make(chan struct{}), done: make(chan struct{})}
	if tab := r.URL.Query().Get("tab"); len(tab) <= MaxID {
		c.tab = tab
	}
	a.mu.Lock()
	if len(a.clients) >= a.cfg.MaxPages {
		a.mu.Unlock()
		http.Error(w, fmt.Sprintf("503: too many open pages of baton's web chat (%d); close one and reload", a.cfg.MaxPages), http.StatusServiceUnavailable)
		return
	}
	a.clients[c] = true
	if c.tab != "" {
		// What this tab asked for and another page showed while it was
		// away comes first (the queue is empty, and larger than maxMissed).
		for _, f := range a.missed[c.tab] {
			c.send(f)
		}
	}
	a.mu.Unlock()
	conn, err := websocket.Accept(w, r, nil) // same-origin only (the default)
	if err != nil {
		a.mu.Lock()
		delete(a.clients, c)
		a.mu.Unlock()
		a.log.Debug("websocket accept", "err", err)
		return
	}
	conn.SetReadLimit(maxFrame)
	a.mu.Lock()
	c.conn = conn
	a.mu.Unlock()
	ctx, cancel := context.WithCancel(r.Context())
	defer func() {
		cancel()
		<-c.done
		a.mu.Lock()
		delete(a.clients, c)
		a.mu.Unlock()
		conn.Close(websocket.StatusNormalClosure, "")
	}()
	go func() {
		defer close(c.done)
		defer cancel()
		c.write(ctx)
	}()
	// What was sent while no page was open (or none showed it) comes now.
	a.redeliver(platform.Address{Platform: Name})
	a.read(ctx, c)
}

// read reads a page's frames until it goes away. Acknowledgements and
// other cheap frames are handled as they arrive; frames that wait on the
// store (a message said, a transcript opened) go to one worker per page,
// in order, so a Send waiting for this page's acknowledgement never waits
// behind the page's own message being stored. The worker's queue is
// bounded: when it is full, reading waits.
func (a *Adapter) read(ctx context.Context, c *client) {
	work := make(chan frame, PageWork)
	worked := make(chan struct{})
	go func() {
		defer close(worked)
		for f := range work {
			a.serveStored(ctx, c, f)
		}
	}()
	// What was read is handled even when the page has gone: a message
	// taken from the socket is stored (or the page, if it comes back,
	// sends it again, unacknowledged).
	defer func() {
		close(work)
		<-worked
	}()
	for {
		_, data, err := c.conn.Read(ctx)
		if err != nil {
			return
		}
		var f frame
		if err := json.Unmarshal(data, &f); err != nil {
			c.send(frame{Type: "error", Error: "not a JSON frame"})
			continue
		}
		if a.serveCheap(c, f) {
			continue
		}
		select {
		case work <- f:
		case <-ctx.Done():
			return
		}
	}
}

// write sends the page its frames until it goes away; when the adapter
// stops, what is still queued (an answer finished in the gateway's grace
// period) is sent before the page is closed.
func (c *client) write(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.closing:
			for {
				select {
				case f := <-c.out:
					if c.writeFrame(ctx, f) != nil {
						return
					}
				default:
					c.conn.Close(websocket.StatusGoingAway, "gateway stopping")
					return
				}
			}
		case f := <-c.out:
			if c.writeFrame(ctx, f) != nil {
				return
			}
		}
	}
}

func (c *client) writeFrame(ctx context.Context, f frame) error {
	b, _ := json.Marshal(f)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return c.conn.Write(wctx, websocket.MessageText, b)
}

// send queues f for the page, unless its queue is full: it reports
// whether f was queued. A page that does not read misses live updates
// (history has them all); a message it missed is sent again.
func (c *client) send(f frame) bool {
	select {
	case c.out <- f:
		return true
	default:
		return false
	}
}

// serveFrame handles one frame of a page, at once.
func (a *Adapter) serveFrame(ctx context.Context, c *client, f frame) {
	if !a.serveCheap(c, f) {
		a.serveStored(ctx, c, f)
	}
}

// serveCheap handles f at once if it needs no store, and reports whether
// it did.
func (a *Adapter) serveCheap(c *client, f frame) bool {
	switch f.Type {
	case "ack":
		// The page showed a message (or had shown it before).
		if f.ID != "" && len(f.ID) <= MaxID {
			a.acknowledge(c, f.ID)
		}
	case "new":
		addr := platform.Address{Platform: Name, Kind: platform.Thread, Chat: HomeChat, Thread: newID()}
		c.send(frame{Type: "conversation", Key: addr.Key(), Title: "New conversation", Focus: true})
	case "list", "open", "say":
		return false
	default:
		c.send(frame{Type: "error", Error: "unknown frame type " + f.Type})
	}
	return true
}

// serveStored handles a frame that reads or writes the store.
func (a *Adapter) serveStored(ctx context.Context, c *client, f frame) {
	switch f.Type {
	case "list":
		items, err := a.conversations(ctx)
		if err != nil {
			c.send(frame{Type: "error", Error: err.Error()})
			return
		}
		c.send(frame{Type: "conversations", Items: items, MaxFile: a.maxFile()})
	case "open":
		if len(f.Key) > MaxKey {
			c.send(frame{Type: "error", Error: fmt.Sprintf("conversation key too long (%d bytes; at most %d)", len(f.Key), MaxKey)})
			return
		}
		if _, err := platform.ParseKey(f.Key); err != nil || !strings.HasPrefix(f.Key, Name+":") {
			c.send(frame{Type: "error", Error: "not a web conversation: " + f.Key})
			return
		}
		lines, err := a.view(ctx, f.Key)
		if err != nil {
			c.send(frame{Type: "error", Key: f.Key, Error: err.Error()})
			return
		}
		c.send(frame{Type: "history", Key: f.Key, Lines: lines})
		a.mu.Lock()
		q, waiting := a.questions[f.Key]
		a.mu.Unlock()
		if waiting {
			// Whichever page the person looks at can answer it.
			c.send(q)
		}
		if addr, err := platform.ParseKey(f.Key); err == nil {
			a.redeliver(addr)
		}
	case "say":
		a.say(ctx, c, f)
	}
}

// say hands what the person typed to the gateway and acknowledges it once
// it is stored.
func (a *Adapter) say(ctx context.Context, c *client, f frame) {
	if why := sayTooBig(f); why != "" {
		c.send(frame{Type: "error", ID: clip(f.ID, MaxID), Error: "say: " + why})
		return
	}
	addr, err := platform.ParseKey(f.Key)
	if err != nil || addr.Platform != Name {
		c.send(frame{Type: "error", ID: f.ID, Error: "say: not a web conversation"})
		return
	}
	if strings.TrimSpace(f.Text) == "" || f.ID == "" {
		c.send(frame{Type: "error", ID: f.ID, Error: "say: needs text and an id"})
		return
	}
	a.mu.Lock()
	h := a.recv
	a.mu.Unlock()
	if h == nil {
		c.send(frame{Type: "error", ID: f.ID, Error: "not ready yet; try again"})
		return
	}
	a.mu.Lock()
	a.rememberAsker(f.Key, c.tab)
	a.mu.Unlock()
	ev := platform.Event{At: addr, SenderID: Owner, Sender: Owner, Text: f.Text, ID: eventID(f.Key, f.ID), Time: time.Now()}
	if err := h.Receive(ctx, ev); err != nil {
		c.send(frame{Type: "error", ID: f.ID, Error: "not stored, please send again: " + err.Error()})
		return
	}
	// Every other page shows what was said: an answer to an approval
	// question as the answer on its card, anything else as said.
	echo := frame{Type: "said", Key: f.Key, ID: f.ID, Text: f.Text, At: ev.Time.UnixMilli()}
	answer, answered := platform.ApprovalAnswer(f.Text)
	if answered {
		echo = frame{Type: "answered", Key: f.Key, Text: answer}
	}
	a.mu.Lock()
	if answered {
		delete(a.questions, f.Key)
	}
	for other := range a.clients {
		if other != c {
			other.send(echo)
		}
	}
	a.mu.Unlock()
	c.send(frame{Type: "ack", ID: f.ID, Key: f.Key, At: time.Now().UnixMilli()})
}

// sayTooBig says which bound a said message passes, or "".
func sayTooBig(f frame) string {
	switch {
	case len(f.ID) > MaxID:
		return fmt.Sprintf("message id too long (%d bytes; at most %d)", len(f.ID), MaxID)
	case len(f.Key) > MaxKey:
		return fmt.Sprintf("conversation key too long (%d bytes; at most %d)", len(f.Key), MaxKey)
	case len(f.Text) > MaxText:
		return fmt.Sprintf("message too long (%d bytes; at most %d): split it", len(f.Text), MaxText)
	}
	return ""
}

// clip cuts s to at most n bytes, for echoing an oversized id.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

func (a *Adapter) broadcast(_ context.Context, f frame) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for c := range a.clients {
		c.send(f)
	}
}

// closeClients closes every page once what is queued for it is sent,
// waiting for that a few seconds at most.
func (a *Adapter) closeClients() {
	a.mu.Lock()
	var open []*client
	for c := range a.clients {
		if c.conn != nil { // its writer runs
			open = append(open, c)
		}
	}
	a.mu.Unlock()
	for _, c := range open {
		c.once.Do(func() { close(c.closing) })
	}
	limit := time.NewTimer(closeWait)
	defer limit.Stop()
	for _, c := range open {
		select {
		case <-c.done:
		case <-limit.C:
			for _, c := range open {
				c.conn.Close(websocket.StatusGoingAway, "gateway stopping")
			}
			return
		}
	}
}

// closeWait bounds how long a stopping adapter waits for its pages to
// receive what is queued for them.
const closeWait = 2 * time.Second

// eventID is the platform message id of a page's message: a page's id is
// unique only among its own messages, so it is scoped by the
// conversation. The same id said in two conversations is two messages,
// not a redelivery to drop.
func eventID(key, pageID string) string { return key + "|" + pageID }
