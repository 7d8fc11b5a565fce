package openai_test

import (
	"bytes"
	"context"
	"image"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/llm"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/llm/openai"
)

// pdf is enough of a PDF for the wire: providers do not parse it here.
var pdf = []byte("%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n")

func userWith(text string, parts ...llm.Part) llm.Request {
	return llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: text, Parts: parts}}}
}

func TestImageSentAsImageURLPart(t *testing.T) {
	srv := llmtest.Start(t)
	p := newProvider(t, openai.Config{BaseURL: srv.URL + "/v1", Model: "gpt-test"})
	photo := llmtest.WithEXIF(llmtest.Photo(4000, 3000), 1)
	req := userWith("what is on the whiteboard?", llm.Part{Kind: llm.PartImage, Name: "board.jpg", MediaType: "image/jpeg", Data: photo})
	if _, err := p.Chat(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	got := srv.Requests()[0]

	// The documented shape: content parts, the image as a data: URL.
	content := got.Messages()[0].(map[string]any)["content"].([]any)
	if len(content) != 2 {
		t.Fatalf("content = %v, want an image part and a text part", content)
	}
	img := content[0].(map[string]any)
	url, _ := img["image_url"].(map[string]any)["url"].(string)
	if img["type"] != "image_url" || !strings.HasPrefix(url, "data:image/jpeg;base64,") {
		t.Fatalf("image part = %.200v", img)
	}
	sameJSON(t, "text part", content[1], `{"type":"text","text":"what is on the whiteboard?"}`)

	images := got.Images()
	if len(images) != 1 || images[0].MediaType != "image/jpeg" {
		t.Fatalf("images = %+v", images)
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(images[0].Data))
	if err != nil {
		t.Fatal(err)
	}
	if max(cfg.Width, cfg.Height) > llm.DefaultMaxImageSide {
		t.Errorf("image arrived at %d×%d, want its long side ≤ %d", cfg.Width, cfg.Height, llm.DefaultMaxImageSide)
	}
	if bytes.Contains(images[0].Data, []byte(llmtest.GPSPlace)) {
		t.Error("the photo's EXIF location reached the model")
	}
}

func TestPDFSentAsFilePartWhereTheServerTakesIt(t *testing.T) {
	srv := llmtest.Start(t)
	p := newProvider(t, openai.Config{BaseURL: srv.URL + "/v1", Model: "gpt-test", PDFFiles: true})
	req := userWith("summarise", llm.Part{Kind: llm.PartDocument, Name: "report.pdf", MediaType: "application/pdf", Data: pdf})
	if _, err := p.Chat(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	got := srv.Requests()[0]
	content := got.Messages()[0].(map[string]any)["content"].([]any)
	sameJSON(t, "file part", content[0], `{"type":"file","file":{"filename":"report.pdf","file_data":"data:application/pdf;base64,`+
		"JVBERi0xLjQKMSAwIG9iajw8Pj5lbmRvYmoKdHJhaWxlcjw8Pj4KJSVFT0YK"+`"}}`)
	parts := got.Parts()
	if len(parts) != 1 || parts[0].Kind != "document" || !bytes.Equal(parts[0].Data, pdf) {
		t.Fatalf("parts = %+v", parts)
	}
}

func TestPDFDescribedWhereTheServerTakesNoFiles(t *testing.T) {
	srv := llmtest.Start(t)
	p := newProvider(t, openai.Config{BaseURL: srv.URL + "/v1", Model: "llama"})
	req := userWith("summarise", llm.Part{Kind: llm.PartDocument, Name: "report.pdf", MediaType: "application/pdf", Data: pdf})
	if _, err := p.Chat(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	got := srv.Requests()[0]
	if len(got.Parts()) != 0 {
		t.Fatalf("parts = %+v, want none", got.Parts())
	}
	if text := got.LastUserText(); !strings.Contains(text, "report.pdf") || !strings.HasSuffix(text, "summarise") {
		t.Fatalf("user text = %q, want the PDF's line, then the question", text)
	}
}

func TestModelWithoutImagesGetsTheLine(t *testing.T) {
	srv := llmtest.Start(t)
	p := newProvider(t, openai.Config{BaseURL: srv.URL + "/v1", Model: "llama", NoImages: true})
	wrapped := llm.WithRetry(p, llm.RetryPolicy{})
	if llm.SeesImages(wrapped, "llama") {
		t.Fatal("SeesImages = true for a provider configured without images")
	}
	if !llm.SeesImages(llm.WithRetry(newProvider(t, openai.Config{BaseURL: srv.URL, Model: "gpt"}), llm.RetryPolicy{}), "gpt") {
		t.Fatal("SeesImages = false by default")
	}
	req := userWith("", llm.Part{Kind: llm.PartImage, Name: "cat.jpg", MediaType: "image/jpeg", Data: llmtest.Photo(8, 8)})
	if _, err := wrapped.Chat(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	got := srv.Requests()[0]
	if len(got.Images()) != 0 || !strings.Contains(got.LastUserText(), "cat.jpg") {
		t.Fatalf("request = %s", got.Raw)
	}
}
