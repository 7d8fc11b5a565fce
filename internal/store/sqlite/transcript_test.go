package sqlite_test

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/sqlite"
)

// mixed is a transcript with every field in use, over several load chunks.
func mixed(n int) []store.Message {
	out := make([]store.Message, n)
	for i := range out {
		m := store.Message{Role: store.RoleUser, Content: sentence(i)}
		switch i % 5 {
		case 1:
			m.Role, m.ToolCalls = store.RoleAssistant, json.RawMessage(fmt.Sprintf(`[{"id":"c%d","name":"read_file"}]`, i))
		case 2:
			m.Role, m.ToolCallID, m.ToolName, m.Content = store.RoleTool, fmt.Sprint("c", i-1), "read_file", "nul\x00 and \x1e\x1f in content"
		case 3:
			m.Platform, m.PlatformMsgID = "telegram", fmt.Sprint(i)
		case 4:
			m.Role, m.Content, m.Kind = "custom-role", "", "custom-kind"
		}
		if i%5 == 0 && i%3 == 0 {
			m.Kind = store.KindHandoff
		}
		out[i] = m
	}
	return out
}

// live is what Transcript must return: History without superseded rows.
func live(t *testing.T, s store.Store, sid string) []store.Message {
	t.Helper()
	h, err := s.History(t.Context(), sid)
	if err != nil {
		t.Fatal(err)
	}
	var out []store.Message
	for _, m := range h {
		if !m.Superseded {
			out = append(out, m)
		}
	}
	return out
}

func sameMessages(t *testing.T, what string, got, want []store.Message) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d messages, want %d", what, len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if !g.CreatedAt.Equal(w.CreatedAt) {
			t.Fatalf("%s: message %d created %v, want %v", what, i, g.CreatedAt, w.CreatedAt)
		}
		g.CreatedAt = w.CreatedAt // same instant; the location may differ
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("%s: message %d\n got %+v\nwant %+v", what, i, g, w)
		}
	}
}

// Long transcripts are read in packed chunks, split between readers; the
// result must be exactly the rows, in order, however it was read.
func TestLongTranscriptLoadsExactly(t *testing.T) {
	for _, opts := range map[string][]sqlite.Option{
		"parallel":   {sqlite.WithoutTranscriptCache()},
		"sequential": {sqlite.WithoutTranscriptCache(), sqlite.WithSequentialLoads()},
		"cached":     nil,
	} {
		s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), sqlite.FileName), opts...)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		sess, _ := s.CreateSession(t.Context(), store.Session{})
		if _, err := s.AppendMessages(t.Context(), sess.ID, mixed(3000)...); err != nil {
			t.Fatal(err)
		}
		tr, err := s.Transcript(t.Context(), sess.ID)
		if err != nil {
			t.Fatal(err)
		}
		sameMessages(t, "first load", tr, live(t, s, sess.ID))
		// After a replacement the live rows start far into the seq range.
		if _, err := s.ReplaceTranscript(t.Context(), sess.ID, mixed(2500)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendMessages(t.Context(), sess.ID, mixed(7)...); err != nil {
			t.Fatal(err)
		}
		tr, err = s.Transcript(t.Context(), sess.ID)
		if err != nil {
			t.Fatal(err)
		}
		sameMessages(t, "after replace", tr, live(t, s, sess.ID))
		if len(tr) != 2507 {
			t.Fatalf("after replace: %d messages, want 2507", len(tr))
		}
	}
}

// Rows that hold the packing separators in metadata (written before
// AppendMessages refused them) are still read exactly, row by row.
func TestSeparatorsInOldRowsStillLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	s, err := sqlite.Open(t.Context(), path, sqlite.WithoutTranscriptCache())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sess, _ := s.CreateSession(t.Context(), store.Session{})
	if _, err := s.AppendMessages(t.Context(), sess.ID, mixed(1200)...); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE messages SET tool_name = ?, platform_msg_id = ?
		WHERE session_id = ? AND seq IN (5, 700)`, "a\x1fb", "c\x1ed", sess.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE messages SET kind = ? WHERE session_id = ? AND seq = 900`, "k\x1e\x1f", sess.ID); err != nil {
		t.Fatal(err)
	}
	tr, err := s.Transcript(t.Context(), sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	sameMessages(t, "with separators", tr, live(t, s, sess.ID))
	if tr[4].ToolName != "a\x1fb" || tr[699].PlatformMsgID != "c\x1ed" || tr[899].Kind != "k\x1e\x1f" {
		t.Fatalf("separators lost: %q, %q, %q", tr[4].ToolName, tr[699].PlatformMsgID, tr[899].Kind)
	}
}

func TestAppendRefusesSeparatorsInMetadata(t *testing.T) {
	s := openTemp(t)
	defer s.Close()
	sess, _ := s.CreateSession(t.Context(), store.Session{})
	for name, m := range map[string]store.Message{
		"role":        {Role: "user\x1e"},
		"tool call":   {Role: store.RoleTool, ToolCallID: "a\x1fb"},
		"tool name":   {Role: store.RoleTool, ToolName: "\x1f"},
		"platform":    {Role: store.RoleUser, Platform: "x\x1e"},
		"platform id": {Role: store.RoleUser, PlatformMsgID: "1\x1f"},
		"tool calls":  {Role: store.RoleAssistant, ToolCalls: json.RawMessage("[\x1e]")},
		"kind":        {Role: store.RoleUser, Kind: "note\x1f"},
	} {
		_, err := s.AppendMessages(t.Context(), sess.ID, m)
		if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "0x1e or 0x1f") {
			t.Errorf("%s: err = %v, want ErrInvalid naming the bytes", name, err)
		}
	}
	// Content may hold any bytes.
	if _, err := s.AppendMessages(t.Context(), sess.ID, store.Message{Role: store.RoleUser, Content: "\x1e\x1f"}); err != nil {
		t.Fatal(err)
	}
}

// While one goroutine keeps replacing and appending, every load is one
// consistent transcript, never a mix of two versions, even when its parts
// are read on several connections.
func TestParallelLoadsSeeOneVersion(t *testing.T) {
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), sqlite.FileName), sqlite.WithoutTranscriptCache())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sess, _ := s.CreateSession(t.Context(), store.Session{})
	version := func(gen, n int) []store.Message {
		out := make([]store.Message, n)
		for i := range out {
			out[i] = store.Message{Role: store.RoleUser, Content: fmt.Sprintf("%d %d", gen, i)}
		}
		return out
	}
	if _, err := s.ReplaceTranscript(t.Context(), sess.ID, version(0, 3000)); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for gen := 1; !stop.Load(); gen++ {
			if _, err := s.ReplaceTranscript(t.Context(), sess.ID, version(gen, 3000+gen%7)); err != nil {
				t.Error(err)
				return
			}
			if _, err := s.AppendMessages(t.Context(), sess.ID, store.Message{Role: store.RoleUser, Content: fmt.Sprintf("%d %d", gen, 3000+gen%7)}); err != nil {
				t.Error(err)
				return
			}
		}
	})
	defer wg.Wait()
	defer stop.Store(true)
	for range 40 {
		tr, err := s.Transcript(t.Context(), sess.ID)
		if err != nil {
			t.Fatal(err)
		}
		var gen0 int
		for i, m := range tr {
			var gen, k int
			if _, err := fmt.Sscanf(m.Content, "%d %d", &gen, &k); err != nil {
				t.Fatalf("message %d: %q", i, m.Content)
			}
			if i == 0 {
				gen0 = gen
			}
			if gen != gen0 || k != i {
				t.Fatalf("load mixes versions: message %d is %q, first was generation %d", i, m.Content, gen0)
			}
		}
		if len(tr) < 3000 {
			t.Fatalf("load has %d messages", len(tr))
		}
	}
}

// A load keeps each whole chunk of 512 live messages as a pack, and later
// loads read the packs: exactly the rows, a damaged pack read from the
// rows again and saved anew, and no pack outliving a replaced transcript.
func TestPacksServeLaterLoads(t *testing.T) {
	for name, opts := range map[string][]sqlite.Option{
		"parallel":   {sqlite.WithoutTranscriptCache()},
		"sequential": {sqlite.WithoutTranscriptCache(), sqlite.WithSequentialLoads()},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), sqlite.FileName)
			s, err := sqlite.Open(t.Context(), path, opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			sess, _ := s.CreateSession(t.Context(), store.Session{})
			if _, err := s.AppendMessages(t.Context(), sess.ID, mixed(2100)...); err != nil {
				t.Fatal(err)
			}
			db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			packs := func() (firsts []int64) {
				t.Helper()
				sqlite.WaitPacks(s)
				rows, err := db.Query(`SELECT first_seq FROM transcript_packs WHERE session_id = ? ORDER BY first_seq`, sess.ID)
				if err != nil {
					t.Fatal(err)
				}
				defer rows.Close()
				for rows.Next() {
					var f int64
					if err := rows.Scan(&f); err != nil {
						t.Fatal(err)
					}
					firsts = append(firsts, f)
				}
				return firsts
			}
			load := func(what string) []store.Message {
				t.Helper()
				tr, err := s.Transcript(t.Context(), sess.ID)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				return tr
			}
			want := live(t, s, sess.ID)
			var whole []int64 // the chunks wholly live
			for _, m := range want {
				if (m.Seq-1)%512 == 0 && m.Seq+511 <= want[len(want)-1].Seq {
					whole = append(whole, m.Seq)
				}
			}
			if whole[0] != 1 {
				t.Fatalf("the first chunk starts at seq %d: a session's first 512 messages are not a chunk", whole[0])
			}
			if len(whole) < 3 {
				t.Fatalf("seqs %d…%d hold %d whole chunks; the test needs 3", want[0].Seq, want[len(want)-1].Seq, len(whole))
			}
			if got := packs(); len(got) != 0 {
				t.Fatalf("packs %v before any load", got)
			}
			sameMessages(t, "first load", load("first load"), want)
			if got := packs(); !reflect.DeepEqual(got, whole) {
				t.Fatalf("packs %v after the first load, want one per whole chunk %v", got, whole)
			}

			// The next load reads the packs: a changed pack shows.
			var body string
			if err := db.QueryRow(`SELECT content FROM transcript_packs WHERE session_id = ? AND first_seq = ?`, sess.ID, whole[1]).Scan(&body); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(`UPDATE transcript_packs SET content = ? WHERE session_id = ? AND first_seq = ?`, "Z"+body[1:], sess.ID, whole[1]); err != nil {
				t.Fatal(err)
			}
			tr := load("from packs")
			var changed []int
			for i := range tr {
				if tr[i].Content != want[i].Content {
					changed = append(changed, i)
				}
			}
			if len(changed) != 1 || tr[changed[0]].Seq < whole[1] || tr[changed[0]].Seq >= whole[1]+512 || !strings.HasPrefix(tr[changed[0]].Content, "Z") {
				t.Fatalf("the changed pack showed in messages %v, want in one message of the chunk from seq %d", changed, whole[1])
			}
			if _, err := db.Exec(`DELETE FROM transcript_packs WHERE session_id = ? AND first_seq = ?`, sess.ID, whole[1]); err != nil {
				t.Fatal(err)
			}

			// A pack that does not parse is read from the rows and made
			// again.
			if _, err := db.Exec(`UPDATE transcript_packs SET seqs = 'not seqs' WHERE session_id = ? AND first_seq = ?`, sess.ID, whole[0]); err != nil {
				t.Fatal(err)
			}
			sameMessages(t, "a pack missing, one damaged", load("a pack missing, one damaged"), want)
			if got := packs(); !reflect.DeepEqual(got, whole) {
				t.Fatalf("packs %v after a load that found one missing and one damaged, want %v", got, whole)
			}
			sameMessages(t, "packs made again", load("packs made again"), want)

			// A replaced transcript takes its packs with it.
			if _, err := s.ReplaceTranscript(t.Context(), sess.ID, mixed(600)); err != nil {
				t.Fatal(err)
			}
			if got := packs(); len(got) != 0 {
				t.Fatalf("packs %v after the transcript was replaced", got)
			}
			sameMessages(t, "after replace", load("after replace"), live(t, s, sess.ID))
		})
	}
}
