package fakekit

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/testutil"
)

// recordingTB keeps what a server reports when it closes.
type recordingTB struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// specServer refuses /put without "v", in its own shape (418 for telling).
func specServer(t *testing.T, tb testing.TB) *Server {
	handled := 0
	var mu sync.Mutex
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		handled++
		mu.Unlock()
		WriteJSON(w, 200, true)
	})
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		if handled != 1 {
			t.Errorf("the handler saw %d requests, want the well-formed one only", handled)
		}
	})
	return New(tb, Config{
		Method: func(r *http.Request) string { return strings.TrimPrefix(r.URL.Path, "/") },
		Spec: func(_ *http.Request, method string, p map[string]string) *Refusal {
			if method == "put" && p["v"] == "" {
				return &Refusal{Field: "v", Reason: "v is required"}
			}
			return nil
		},
		Refuse: func(w http.ResponseWriter, _ *http.Request, ref Refusal) {
			WriteJSON(w, http.StatusTeapot, map[string]any{"refused": ref.String()})
		},
	}, h)
}

func TestSpecRefusalAnsweredRecordedAndReported(t *testing.T) {
	tb := &recordingTB{TB: t}
	s := specServer(t, tb)
	status, body, _ := get(t, s, "/put")
	if status != http.StatusTeapot || !strings.Contains(body, "put: v: v is required") {
		t.Errorf("refused: %d %q", status, body)
	}
	if status, _, _ := get(t, s, "/put?v=1"); status != 200 {
		t.Errorf("well-formed: %d", status)
	}
	if refs := s.Refusals(); len(refs) != 1 || refs[0].Method != "put" || refs[0].Field != "v" {
		t.Errorf("refusals = %+v", refs)
	}
	if c := s.Calls(); len(c) != 2 || c[0].Status != http.StatusTeapot || !strings.HasPrefix(c[0].Note, "refused: ") {
		t.Errorf("calls = %+v", c)
	}
	s.Close()
	if len(tb.errors) != 1 || !strings.Contains(tb.errors[0], "put: v: v is required") {
		t.Errorf("a refused request did not fail the test at Close: %q", tb.errors)
	}
}

func TestExpectedRefusalsDoNotFailTheTest(t *testing.T) {
	tb := &recordingTB{TB: t}
	s := specServer(t, tb)
	s.ExpectRefusals()
	if status, _, _ := get(t, s, "/put"); status != http.StatusTeapot {
		t.Errorf("refused: %d", status)
	}
	get(t, s, "/put?v=1")
	s.Close()
	if len(tb.errors) != 0 {
		t.Errorf("an expected refusal failed the test: %q", tb.errors)
	}
}

// A request whose sender died mid-body (a gateway killed while it wrote)
// never reached the service whole: nothing was refused, and the test the
// kill belongs to must not fail on it.
func TestCutBodyIsNoRefusal(t *testing.T) {
	tb := &recordingTB{TB: t}
	s := specServer(t, tb)
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	// Says 100 bytes, sends 3 of them, and is gone.
	fmt.Fprintf(conn, "POST /put HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\nv=1")
	conn.Close()
	if _, _, _ = get(t, s, "/put?v=1"); len(s.Calls()) < 1 {
		t.Fatal("the well-formed request was not recorded")
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return len(s.Calls()) == 2 }, "the cut request recorded")
	if refs := s.Refusals(); len(refs) != 0 {
		t.Errorf("a cut body counted as a refusal: %+v", refs)
	}
	s.Close()
	if len(tb.errors) != 0 {
		t.Errorf("a cut body failed the test: %q", tb.errors)
	}
}
