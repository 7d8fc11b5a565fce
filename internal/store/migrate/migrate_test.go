package migrate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/migrate"
	"github.com/baton-agent/baton/internal/store/postgres"
	"github.com/baton-agent/baton/internal/store/postgres/pgtest"
	"github.com/baton-agent/baton/internal/store/sqlite"
	"github.com/baton-agent/baton/internal/store/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// must and must2 stop a test with err; guard, deferred by each test,
// turns that into its failure.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func must2[A, B any](a A, b B, err error) (A, B) {
	if err != nil {
		panic(err)
	}
	return a, b
}

func guard(t testing.TB) {
	if r := recover(); r != nil {
		t.Helper()
		t.Fatal(r)
	}
}

func noErr(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// fixture is what fill stored, to be read back from the copy.
type fixture struct {
	sessions []string
	owner    string
	files    []string // sha256s
	messages int
}

// fill stores some of every kind of row in st through the store's own
// methods, with messages in all (attachments on every 25th), so that
// the copy is checked against what baton itself writes.
func fill(t testing.TB, st store.Store, messages int) fixture {
	t.Helper()
	ctx := context.Background()
	var fx fixture
	owner := must(st.CreateUser(ctx, "Ada"))
	other := must(st.CreateUser(ctx, "Bo"))
	fx.owner = owner.ID
	noErr(t, st.LinkIdentity(ctx, store.Identity{Platform: "cli", PlatformUserID: "ada", UserID: owner.ID, DisplayName: "Ada"}))
	noErr(t, st.LinkIdentity(ctx, store.Identity{Platform: "telegram", PlatformUserID: "42", UserID: owner.ID, DisplayName: "Ada L."}))
	noErr(t, st.LinkIdentity(ctx, store.Identity{Platform: "slack", PlatformUserID: "U9", UserID: other.ID}))

	img := must(st.PutFile(ctx, bytes.NewReader(storetest.PNG(t, 4, 3)), "photo.png"))
	doc := must(st.PutFile(ctx, bytes.NewReader(storetest.PDF), "paper.pdf"))
	voice := must(st.PutFile(ctx, strings.NewReader("OggS pretend voice note"), "voice.ogg"))
	voice.Voice = true
	queued := must(st.PutFile(ctx, strings.NewReader("bytes only a queue names"), "queued.txt"))
	fx.files = []string{img.SHA256, doc.SHA256, voice.SHA256, queued.SHA256}

	const sessions = 20
	per := messages / sessions
	for i := range sessions {
		in := store.Session{OwnerID: owner.ID, Model: "m-1", Platform: "cli", Holder: "cli:dm:" + owner.ID}
		switch i {
		case 1:
			in.Title = "Trip to Lisbon"
		case 2:
			in.OwnerID, in.Platform, in.Holder = other.ID, "slack", "slack:T1:C1"
		case 3:
			in.Voice = true
		case 4:
			in.ParentID = fx.sessions[0]
		}
		sess := must(st.CreateSession(ctx, in))
		fx.sessions = append(fx.sessions, sess.ID)
		for n := 0; n < per; n += 100 {
			batch := make([]store.Message, 0, 100)
			for j := n; j < min(n+100, per); j++ {
				batch = append(batch, message(i, j, img, doc, voice))
			}
			if i == 5 && n == 0 {
				must(st.AppendMessagesWithUsage(ctx, sess.ID, store.Usage{InputTokens: 1200, OutputTokens: 340}, batch...))
				continue
			}
			must(st.AppendMessages(ctx, sess.ID, batch...))
		}
		fx.messages += per
	}
	// A compressed session: its first rows superseded, kept in History.
	sid := fx.sessions[6]
	must(st.ReplaceTranscript(ctx, sid, []store.Message{
		{Role: store.RoleUser, Kind: store.KindSummary, Content: "[Summary] they talked about trains"},
		{Role: store.RoleAssistant, Content: "Right, trains."},
	}))
	fx.messages += 2
	noErr(t, st.SetDraft(ctx, fx.sessions[7], "half an answer, \x00 and all"))
	noErr(t, st.EndSession(ctx, fx.sessions[8], "done"))
	noErr(t, st.SetModel(ctx, fx.sessions[9], "m-2"))
	hist := must(st.History(ctx, fx.sessions[3]))
	for _, m := range hist {
		for _, a := range m.Attachments {
			if a.Voice {
				noErr(t, st.SetTranscript(ctx, a.ID, "what the voice note says"))
			}
		}
	}

	must(st.Bind(ctx, "cli:dm:"+owner.ID, fx.sessions[0]))
	must(st.Bind(ctx, "telegram:dm:42", fx.sessions[1]))
	must(st.Bind(ctx, "slack:T1:C1", fx.sessions[2]))

	done := must(st.RequestHandoff(ctx, fx.sessions[1], "cli", "telegram"))
	must2(st.ClaimHandoff(ctx, done.ID, "gw-1", time.Minute))
	must(st.SetHandoffDestination(ctx, done.ID, "gw-1", "telegram:dm:42"))
	must(st.CompleteHandoff(ctx, done.ID, "gw-1"))
	failed := must(st.RequestHandoff(ctx, fx.sessions[2], "slack", "discord"))
	must2(st.ClaimHandoff(ctx, failed.ID, "gw-1", time.Minute))
	must(st.FailHandoff(ctx, failed.ID, "gw-1", "no \x00 such channel"))
	pending := must(st.RequestHandoff(ctx, fx.sessions[0], "cli", "slack"))

	must2(st.AddNote(ctx, store.Note{SessionID: fx.sessions[1], HandoffID: done.ID, Body: `{"about":"Lisbon"}`}))
	must2(st.AddNote(ctx, store.Note{SessionID: fx.sessions[0], Body: `{"about":"trains"}`, Fallback: "the model was away"}))
	must2(st.AddNote(ctx, store.Note{SessionID: fx.sessions[0], HandoffID: pending.ID, Body: `{"about":"trains, later"}`}))

	now := time.Now()
	must2(st.AskPairing(ctx, store.PairingAsk{Platform: "telegram", PlatformUserID: "77", Sender: "Cy", AddressKey: "telegram:dm:77",
		Code: "ABCD2345", Now: now, TTL: time.Hour, MaxPending: 3, MaxAttempts: 5, Lock: time.Hour, Renew: time.Minute}))
	noErr(t, st.SetHomeChannel(ctx, "telegram", "telegram:dm:42"))
	noErr(t, st.SetHomeChannel(ctx, "slack", "slack:T1:C1"))
	noErr(t, st.SetPlatformState(ctx, "matrix", "since", "s72594_4483_1934"))

	in1, _ := must2(st.AddInbound(ctx, store.Inbound{Platform: "telegram", PlatformMsgID: "m1", AddressKey: "telegram:dm:42",
		SenderID: "42", Sender: "Ada", Text: "handled", Attachments: []store.Attachment{img}}))
	noErr(t, st.MarkInboundDone(ctx, in1.ID))
	in2, _ := must2(st.AddInbound(ctx, store.Inbound{Platform: "slack", PlatformMsgID: "m2", AddressKey: "slack:T1:C9",
		SenderID: "U9", Sender: "Bo", Text: "parked here", Attachments: []store.Attachment{queued}}))
	noErr(t, st.ParkInbound(ctx, in2.ID, fx.sessions[2], "slack:T1:C9"))
	must2(st.AddInbound(ctx, store.Inbound{Platform: "telegram", PlatformMsgID: "m3", AddressKey: "telegram:dm:42",
		SenderID: "42", Sender: "Ada", Text: "still waiting \xff"}))

	ds := must(st.EnqueueDeliveries(ctx,
		store.Delivery{Key: "d:1", AddressKey: "telegram:dm:42", Text: "sent"},
		store.Delivery{Key: "d:2", AddressKey: "telegram:dm:42", Text: "may I?", Kind: store.DeliveryApproval,
			Data: store.DeliveryData{Tool: "shell", Subject: "ls -la", Choices: []string{"approve", "deny"}, Expires: now.Add(time.Hour)}},
		store.Delivery{Key: "d:3", AddressKey: "slack:T1:C1", Text: "gone"},
		store.Delivery{AddressKey: "slack:T1:C1", Text: "with a file", Attachments: []store.Attachment{doc}},
	))
	noErr(t, st.MarkDelivered(ctx, ds[0].ID, "tg-99"))
	noErr(t, st.RecordDeliveryFailure(ctx, ds[1].ID, "timeout"))
	noErr(t, st.AbandonDelivery(ctx, ds[2].ID, "chat not found"))
	return fx
}

// message is the j-th message of session i: every role, kind and field
// in turn, words people do not type (a NUL, invalid UTF-8) included.
func message(i, j int, img, doc, voice store.Attachment) store.Message {
	m := store.Message{Platform: "cli", Content: fmt.Sprintf("session %d message %d about kubernetes and café", i, j)}
	switch j % 5 {
	case 0:
		m.Role = store.RoleUser
		m.PlatformMsgID = fmt.Sprintf("p-%d-%d", i, j)
	case 1:
		m.Role = store.RoleAssistant
		m.ToolCalls = json.RawMessage(fmt.Sprintf(`[{"id":"c%d","type":"function","function":{"name":"shell", "arguments":"{\"z\":1,\"a\":2}"}}]`, j))
	case 2:
		m.Role, m.ToolCallID, m.ToolName = store.RoleTool, fmt.Sprintf("c%d", j-1), "shell"
		m.Content += "\x00\xfe"
	case 3:
		m.Role, m.Kind = store.RoleUser, store.KindNotice
	case 4:
		m.Role = store.RoleAssistant
	}
	if j%25 == 0 {
		m.Attachments = []store.Attachment{img, doc}
		if j%50 == 0 {
			m.Attachments = append(m.Attachments, voice)
		}
	}
	return m
}

func openSQLite(t testing.TB, dir string) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, sqlite.FileName))
	noErr(t, err)
	t.Cleanup(func() { st.Close() })
	return st
}

func openPostgres(t testing.TB, url string) *postgres.Store {
	t.Helper()
	st, err := postgres.Open(context.Background(), url)
	noErr(t, err)
	t.Cleanup(func() { st.Close() })
	return st
}

// TestMigrateTenThousandMessages copies a store of 10,000 messages with
// attachments and some of every other kind, and reads it back through
// the Postgres store: the same counts, checksums and rows as the SQLite
// store reads.
func TestMigrateTenThousandMessages(t *testing.T) {
	defer guard(t)
	ctx := t.Context()
	url := pgtest.NewDatabase(t)
	src := openSQLite(t, t.TempDir())
	fx := fill(t, src, 10000)
	dst := openPostgres(t, url)

	r, err := migrate.Run(ctx, src, dst)
	if err != nil {
		var b strings.Builder
		r.Write(&b, "sqlite", "postgres")
		t.Fatalf("%v\n%s", err, b.String())
	}
	if r.Messages != int64(fx.messages) || r.From["messages"] != r.Messages {
		t.Errorf("%d messages stored, %d counted, %d copied", fx.messages, r.From["messages"], r.Messages)
	}
	for _, k := range store.CountKinds {
		if r.From[k] == 0 {
			t.Errorf("the fixture holds no %s: the test checks nothing of them", k)
		}
	}
	if len(r.Sessions) != len(fx.sessions) {
		t.Errorf("%d sessions summed, want %d", len(r.Sessions), len(fx.sessions))
	}
	t.Logf("copied %d messages in %v (%.0f messages/s)", r.Messages, r.Copy, float64(r.Messages)/r.Copy.Seconds())

	same(t, src, dst, fx)

	// The copy is a store to go on with: new rows take new ids.
	msgs := must(dst.AppendMessages(ctx, fx.sessions[0], store.Message{Role: store.RoleUser, Content: "after the move"}))
	if msgs[0].ID <= r.From["messages"] {
		t.Errorf("a message stored after the move took id %d, at or below the copied ones", msgs[0].ID)
	}
	must(dst.CreateSession(ctx, store.Session{OwnerID: fx.owner}))
	must2(dst.AddInbound(ctx, store.Inbound{Platform: "telegram", PlatformMsgID: "after", AddressKey: "telegram:dm:42", Text: "hi"}))
	must(dst.EnqueueDeliveries(ctx, store.Delivery{Key: "after", AddressKey: "telegram:dm:42", Text: "hello"}))
	h := must(dst.RequestHandoff(ctx, fx.sessions[3], "cli", "telegram"))
	must2(dst.AddNote(ctx, store.Note{SessionID: fx.sessions[3], HandoffID: h.ID, Body: "{}"}))
	hits := must(dst.Search(ctx, store.SearchQuery{Text: "kube* cafe", SessionID: fx.sessions[4]}))
	if len(hits) == 0 {
		t.Error("the copy's search finds nothing of the copied messages")
	}
}

// same compares what both stores read back, method by method.
func same(t *testing.T, a, b store.Store, fx fixture) {
	t.Helper()
	ctx := t.Context()
	eq := func(what string, x, y any) {
		t.Helper()
		if !reflect.DeepEqual(x, y) && !(empty(x) && empty(y)) {
			t.Errorf("%s differs:\nsqlite:   %+v\npostgres: %+v", what, x, y)
		}
	}
	for _, sid := range fx.sessions {
		eq("session "+sid, must(a.GetSession(ctx, sid)), must(b.GetSession(ctx, sid)))
		ha, hb := must(a.History(ctx, sid)), must(b.History(ctx, sid))
		if len(ha) != len(hb) {
			t.Fatalf("session %s: %d rows in sqlite's history, %d in postgres's", sid, len(ha), len(hb))
		}
		for i := range ha {
			eq(fmt.Sprintf("session %s message %d", sid, i), ha[i], hb[i])
		}
		eq("transcript "+sid, must(a.Transcript(ctx, sid)), must(b.Transcript(ctx, sid)))
		eq("turn start "+sid, must(a.TurnStart(ctx, sid)), must(b.TurnStart(ctx, sid)))
		eq("bindings "+sid, must(a.BindingsForSession(ctx, sid)), must(b.BindingsForSession(ctx, sid)))
		eq("handoff "+sid, must(a.HandoffState(ctx, sid)), must(b.HandoffState(ctx, sid)))
		eq("notes "+sid, must(a.SessionNotes(ctx, sid)), must(b.SessionNotes(ctx, sid)))
	}
	list := store.SessionFilter{Limit: 100}
	eq("session list", must(a.ListSessions(ctx, list)), must(b.ListSessions(ctx, list)))
	eq("owner's identities", must(a.IdentitiesForUser(ctx, fx.owner)), must(b.IdentitiesForUser(ctx, fx.owner)))
	eq("user", must(a.GetUser(ctx, fx.owner)), must(b.GetUser(ctx, fx.owner)))
	now := time.Now()
	eq("pairings", must(a.PendingPairings(ctx, now)), must(b.PendingPairings(ctx, now)))
	eq("home channels", must(a.HomeChannels(ctx)), must(b.HomeChannels(ctx)))
	eq("platform state", must(a.PlatformState(ctx, "matrix", "since")), must(b.PlatformState(ctx, "matrix", "since")))
	eq("pending inbound", must(a.PendingInbound(ctx, 0, 0)), must(b.PendingInbound(ctx, 0, 0)))
	eq("parked", must(a.Parked(ctx, "slack:T1:C9")), must(b.Parked(ctx, "slack:T1:C9")))
	eq("pending deliveries", must(a.PendingDeliveries(ctx, "", 0)), must(b.PendingDeliveries(ctx, "", 0)))
	for _, k := range []string{"d:1", "d:2", "d:3"} {
		eq("delivery "+k, must(a.DeliveryByKey(ctx, k)), must(b.DeliveryByKey(ctx, k)))
	}
	eq("draft", must(a.Draft(ctx, fx.sessions[7])), must(b.Draft(ctx, fx.sessions[7])))
	for _, sha := range fx.files {
		eq("file "+sha, read(t, a, sha), read(t, b, sha))
	}
}

// empty reports whether v is a list or map of nothing: one store says
// none with nil, the other with an empty slice.
func empty(v any) bool {
	r := reflect.ValueOf(v)
	return (r.Kind() == reflect.Slice || r.Kind() == reflect.Map) && r.Len() == 0
}

func read(t *testing.T, st store.Store, sha string) []byte {
	t.Helper()
	f := must(st.OpenFile(t.Context(), sha))
	defer f.Close()
	return must(io.ReadAll(f))
}

// TestMigrateRefusesAStoreWithRows leaves a database holding rows as it
// was, saying so.
func TestMigrateRefusesAStoreWithRows(t *testing.T) {
	defer guard(t)
	ctx := t.Context()
	src := openSQLite(t, t.TempDir())
	fill(t, src, 100)
	dst := openPostgres(t, pgtest.NewDatabase(t))
	kept := must(dst.CreateSession(ctx, store.Session{Title: "already here"}))

	_, err := migrate.Run(ctx, src, dst)
	if !errors.Is(err, store.ErrNotEmpty) {
		t.Fatalf("migrate into a database holding a session: %v, want ErrNotEmpty", err)
	}
	if !strings.Contains(err.Error(), "1 session") {
		t.Errorf("the refusal does not say what the database holds: %v", err)
	}
	got := must(dst.Count(ctx))
	if got["sessions"] != 1 || got["messages"] != 0 || got["users"] != 0 {
		t.Errorf("the refused import left %v", got)
	}
	must(dst.GetSession(ctx, kept.ID))
}

// TestMigrateDetectsADamagedFile refuses a copy whose bytes on disk do not
// match their name, and leaves the target empty.
func TestMigrateDetectsADamagedFile(t *testing.T) {
	defer guard(t)
	ctx := t.Context()
	dir := t.TempDir()
	src := openSQLite(t, dir)
	fx := fill(t, src, 100)
	p, _ := src.FilePath(fx.files[1])
	noErr(t, os.Chmod(p, 0o600))
	noErr(t, os.WriteFile(p, []byte("not the PDF any more"), 0o600))
	dst := openPostgres(t, pgtest.NewDatabase(t))

	_, err := migrate.Run(ctx, src, dst)
	if err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("migrate with a damaged file: %v, want it refused as damaged", err)
	}
	got := must(dst.Count(ctx))
	for k, n := range got {
		if n != 0 {
			t.Errorf("the failed import left %d %s", n, k)
		}
	}
}

// BenchmarkMigrate copies a store of 10,000 messages into a new database
// per run and reports messages copied per second (the import alone).
func BenchmarkMigrate(b *testing.B) {
	defer guard(b)
	src := openSQLite(b, b.TempDir())
	fill(b, src, 10000)
	var msgs int64
	var took time.Duration
	for b.Loop() {
		b.StopTimer()
		dst := openPostgres(b, pgtest.NewDatabase(b))
		b.StartTimer()
		r, err := migrate.Run(b.Context(), src, dst)
		noErr(b, err)
		msgs += r.Messages
		took += r.Copy
	}
	b.ReportMetric(float64(msgs)/took.Seconds(), "msgs/s")
}

// cancelling is a source whose dump is interrupted (Ctrl-C) once the
// first messages are handed over.
type cancelling struct {
	*sqlite.Store
	cancel context.CancelFunc
}

func (c cancelling) Dump(ctx context.Context, load func(store.Batch) error) error {
	return c.Store.Dump(ctx, func(b store.Batch) error {
		err := load(b)
		if len(b.Messages) > 0 {
			c.cancel()
		}
		return err
	})
}

// TestMigrateInterruptedLeavesTheTargetEmpty: stopped midway, the copy
// leaves nothing behind, so the same database can take it again.
func TestMigrateInterruptedLeavesTheTargetEmpty(t *testing.T) {
	defer guard(t)
	src := openSQLite(t, t.TempDir())
	fill(t, src, 5000)
	dst := openPostgres(t, pgtest.NewDatabase(t))
	ctx, cancel := context.WithCancel(t.Context())
	r, err := migrate.Run(ctx, cancelling{src, cancel}, dst)
	if !errors.Is(err, context.Canceled) || r.Copied {
		t.Fatalf("an interrupted migrate: %v (copied: %v), want context.Canceled and nothing copied", err, r.Copied)
	}
	for k, n := range must(dst.Count(t.Context())) {
		if n != 0 {
			t.Errorf("the interrupted import left %d %s", n, k)
		}
	}
	if _, err := migrate.Run(t.Context(), src, dst); err != nil {
		t.Fatalf("migrate again after the interruption: %v", err)
	}
}
