package platform_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/baton-agent/baton/internal/platform"
)

func TestRefusalsAreLoggedOnce(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(lockedWriter{&mu, &buf}, nil))
	var r platform.Refusals
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.Log(log, "typing", errors.New("403 forbidden"))
		}()
	}
	wg.Wait()
	r.Log(log, "edit", errors.New("400"))
	mu.Lock()
	defer mu.Unlock()
	out := buf.String()
	if n := strings.Count(out, "method=typing"); n != 1 {
		t.Errorf("typing logged %d times:\n%s", n, out)
	}
	if n := strings.Count(out, "method=edit"); n != 1 || !strings.Contains(out, "403 forbidden") {
		t.Errorf("log:\n%s", out)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
