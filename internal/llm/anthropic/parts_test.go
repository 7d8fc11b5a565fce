package anthropic_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"image"
	"testing"

	"github.com/baton-agent/baton/internal/llm"
	"github.com/baton-agent/baton/internal/llm/anthropic"
	"github.com/baton-agent/baton/internal/llm/llmtest"
)

func TestImageAndPDFSentAsBlocks(t *testing.T) {
	srv := llmtest.Start(t)
	p := newProvider(t, anthropic.Config{BaseURL: srv.URL, APIKey: "sk-ant-test", Model: "claude-test"})
	if got := llm.MaxImageSide(llm.WithRetry(p, llm.RetryPolicy{})); got != anthropic.MaxImageSide {
		t.Fatalf("MaxImageSide = %d, want %d", got, anthropic.MaxImageSide)
	}
	pdf := []byte("%PDF-1.4\n%%EOF\n")
	req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "what do these say?", Parts: []llm.Part{
		{Kind: llm.PartImage, Name: "board.jpg", MediaType: "image/jpeg", Data: llmtest.WithEXIF(llmtest.Photo(4000, 3000), 1)},
		{Kind: llm.PartDocument, Name: "report.pdf", MediaType: "application/pdf", Data: pdf},
	}}}}
	if _, err := p.Chat(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	got := srv.Requests()[0]
	content := got.Messages()[0].(map[string]any)["content"].([]any)
	if len(content) != 3 {
		t.Fatalf("content has %d blocks, want image, document, text", len(content))
	}

	// The documented shapes: an image block with a base64 source, a
	// document block with a base64 PDF source, then the text.
	img := content[0].(map[string]any)
	src, _ := img["source"].(map[string]any)
	if img["type"] != "image" || src["type"] != "base64" || src["media_type"] != "image/jpeg" {
		t.Fatalf("image block = %.300v", img)
	}
	sameJSON(t, "document block", content[1], `{"type":"document","title":"report.pdf","source":{"type":"base64","media_type":"application/pdf","data":"`+
		base64.StdEncoding.EncodeToString(pdf)+`"}}`)
	sameJSON(t, "text block", content[2], `{"type":"text","text":"what do these say?"}`)

	images := got.Images()
	if len(images) != 1 {
		t.Fatalf("images = %d", len(images))
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(images[0].Data))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Width != anthropic.MaxImageSide || cfg.Height != anthropic.MaxImageSide*3/4 {
		t.Errorf("image arrived at %d×%d, want %d on its long side", cfg.Width, cfg.Height, anthropic.MaxImageSide)
	}
	if bytes.Contains(images[0].Data, []byte(llmtest.GPSPlace)) {
		t.Error("the photo's EXIF location reached the model")
	}
	if docs := got.Parts(); len(docs) != 2 || docs[1].Kind != "document" || docs[1].Name != "report.pdf" || !bytes.Equal(docs[1].Data, pdf) {
		t.Fatalf("parts = %+v", docs)
	}
}

func TestUndecodableImageIsDescribed(t *testing.T) {
	srv := llmtest.Start(t)
	p := newProvider(t, anthropic.Config{BaseURL: srv.URL, APIKey: "k", Model: "claude-test"})
	req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{
		{Kind: llm.PartImage, Name: "shot.heic", MediaType: "image/heic", Data: []byte("not decodable here")},
	}}}}
	if _, err := p.Chat(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	got := srv.Requests()[0]
	if len(got.Images()) != 0 || got.LastUserText() == "" {
		t.Fatalf("request = %s", got.Raw)
	}
}
