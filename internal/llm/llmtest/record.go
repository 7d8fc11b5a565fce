package llmtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	_ "image/gif" // sizes of the images a request carried
	_ "image/jpeg"
	_ "image/png"
	"io"
	"net/http"
)

// RecordPath is where the server tells what it received, for tests that
// run it as its own process (llmfake) and cannot call Requests.
const RecordPath = "/llmtest/requests"

// Summary is one received request as RecordPath reports it.
type Summary struct {
	Protocol     string        `json:"protocol"`
	Model        string        `json:"model"`
	LastUserText string        `json:"last_user_text"`
	Parts        []PartSummary `json:"parts"`
}

// PartSummary is an image or document a request carried, by its digest.
type PartSummary struct {
	Role      string `json:"role"`
	Kind      string `json:"kind"` // "image" or "document"
	MediaType string `json:"media_type"`
	Name      string `json:"name,omitempty"`
	Size      int    `json:"size"`
	SHA256    string `json:"sha256"`
	Width     int    `json:"width,omitempty"` // images the server could read
	Height    int    `json:"height,omitempty"`
}

// Summarize reports r as RecordPath does.
func (r Request) Summarize() Summary {
	s := Summary{Protocol: r.Protocol(), Model: r.Model(), LastUserText: r.LastUserText(), Parts: []PartSummary{}}
	for _, p := range r.Parts() {
		sum := sha256.Sum256(p.Data)
		ps := PartSummary{Role: p.Role, Kind: p.Kind, MediaType: p.MediaType, Name: p.Name, Size: len(p.Data), SHA256: hex.EncodeToString(sum[:])}
		if cfg, _, err := image.DecodeConfig(bytes.NewReader(p.Data)); err == nil && p.Kind == "image" {
			ps.Width, ps.Height = cfg.Width, cfg.Height
		}
		s.Parts = append(s.Parts, ps)
	}
	return s
}

func (s *Server) serveRecord(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, `{"error":{"message":"llmtest: GET only"}}`, http.StatusMethodNotAllowed)
		return
	}
	reqs := s.Requests()
	out := make([]Summary, 0, len(reqs))
	for _, req := range reqs {
		out = append(out, req.Summarize())
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// Received asks the server at baseURL (llmfake's printed URL) what it has
// received so far, in order.
func Received(ctx context.Context, baseURL string) ([]Summary, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+RecordPath, nil)
	if err != nil {
		return nil, fmt.Errorf("llmtest: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("llmtest: ask %s: %w", baseURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return nil, fmt.Errorf("llmtest: %s: HTTP %d: %s", RecordPath, resp.StatusCode, body)
	}
	var out []Summary
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("llmtest: %s: %w", RecordPath, err)
	}
	return out, nil
}
