package platform

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestCheckDownloadRefusesOverTheLimitInOneLine(t *testing.T) {
	if err := CheckDownload("Telegram", "a.pdf", 20<<20, 20<<20); err != nil {
		t.Errorf("exactly the limit refused: %v", err)
	}
	if err := CheckDownload("Telegram", "a.pdf", 0, 20<<20); err != nil {
		t.Errorf("an unknown size refused: %v", err)
	}
	err := CheckDownload("Telegram", "a.pdf", 25<<20, 20<<20)
	var tl *TooLargeError
	if !errors.As(err, &tl) || !errors.Is(err, ErrTooLarge) || !errors.Is(err, ErrPermanent) {
		t.Fatalf("over the limit: %v", err)
	}
	if got, want := err.Error(), "a.pdf is 25 MB, over the 20 MB limit for files from Telegram"; got != want {
		t.Errorf("reason %q, want %q", got, want)
	}
	if cl, _ := Classify(err); cl != ClassPermanent {
		t.Errorf("class %v, want permanent", cl)
	}
}

func TestLimitDownloadStopsPastTheLimit(t *testing.T) {
	body := func(n int) io.ReadCloser { return io.NopCloser(strings.NewReader(strings.Repeat("x", n))) }
	data, err := io.ReadAll(LimitDownload(body(100), "Telegram", "f", 100))
	if err != nil || len(data) != 100 {
		t.Errorf("exactly the limit: %d bytes, %v", len(data), err)
	}
	data, err = io.ReadAll(LimitDownload(body(101), "Telegram", "f", 100))
	if !errors.Is(err, ErrTooLarge) || len(data) > 100 {
		t.Errorf("one byte over: %d bytes, %v", len(data), err)
	}
	if err != nil && err.Error() != "f is more than 100 bytes, over the 100 bytes limit for files from Telegram" {
		t.Errorf("reason %q", err)
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{812: "812 bytes", 1536: "1.5 kB", 20 << 20: "20 MB", 3 << 30: "3 GB"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}
