package platform

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"
)

// What an adapter's configuration leaves zero is filled one way for all.
func TestAdapterDefaults(t *testing.T) {
	if got := RequestTimeout(0); got != DefaultRequestTimeout {
		t.Errorf("RequestTimeout(0) = %v", got)
	}
	if got := RequestTimeout(-time.Second); got != DefaultRequestTimeout {
		t.Errorf("RequestTimeout(-1s) = %v", got)
	}
	if got := RequestTimeout(5 * time.Second); got != 5*time.Second {
		t.Errorf("RequestTimeout(5s) = %v", got)
	}
	if HTTPClientOr(nil) == nil {
		t.Error("no client where none was given")
	}
	own := &http.Client{}
	if HTTPClientOr(own) != own {
		t.Error("the configured client was replaced")
	}
	var buf bytes.Buffer
	Logger(slog.New(slog.NewTextHandler(&buf, nil)), "slack").Info("hello")
	if !strings.Contains(buf.String(), "platform=slack") {
		t.Errorf("log line %q is not tagged with its platform", buf.String())
	}
	if Logger(nil, "slack") == nil {
		t.Error("no log where none was given")
	}
}
