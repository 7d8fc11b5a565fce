package llmtest_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"testing"

	"github.com/baton-agent/baton/internal/llm/llmtest"
)

func TestPartsInBothWireShapesAreRecorded(t *testing.T) {
	srv := llmtest.Start(t)
	png := []byte("\x89PNG\r\n\x1a\nnot really")
	pdf := []byte("%PDF-1.4\n%%EOF\n")
	b64 := base64.StdEncoding.EncodeToString
	post(t, srv.URL+"/v1/chat/completions", `{"model":"gpt","messages":[{"role":"user","content":[
		{"type":"image_url","image_url":{"url":"data:image/png;base64,`+b64(png)+`"}},
		{"type":"file","file":{"filename":"a.pdf","file_data":"data:application/pdf;base64,`+b64(pdf)+`"}},
		{"type":"text","text":"look"}]}]}`)
	post(t, srv.URL+"/v1/messages", `{"model":"claude","max_tokens":10,"messages":[{"role":"user","content":[
		{"type":"image","source":{"type":"base64","media_type":"image/png","data":"`+b64(png)+`"}},
		{"type":"document","title":"a.pdf","source":{"type":"base64","media_type":"application/pdf","data":"`+b64(pdf)+`"}},
		{"type":"text","text":"look"}]}]}`)

	reqs := srv.Requests()
	for i, r := range reqs {
		parts := r.Parts()
		if len(parts) != 2 {
			t.Fatalf("request %d (%s): parts = %+v", i, r.Protocol(), parts)
		}
		img, doc := parts[0], parts[1]
		if img.Kind != "image" || img.MediaType != "image/png" || !bytes.Equal(img.Data, png) || img.Role != "user" {
			t.Errorf("%s image = %+v", r.Protocol(), img)
		}
		if doc.Kind != "document" || doc.MediaType != "application/pdf" || doc.Name != "a.pdf" || !bytes.Equal(doc.Data, pdf) {
			t.Errorf("%s document = %+v", r.Protocol(), doc)
		}
		if len(r.Images()) != 1 || r.LastUserText() != "look" {
			t.Errorf("%s: images %d, text %q", r.Protocol(), len(r.Images()), r.LastUserText())
		}
	}

	// The same, asked over HTTP as a test does of llmfake in its own process.
	got, err := llmtest.Received(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Protocol != "openai" || got[1].Protocol != "anthropic" {
		t.Fatalf("received = %+v", got)
	}
	for _, s := range got {
		if len(s.Parts) != 2 || s.Parts[0].Kind != "image" || s.Parts[0].Size != len(png) || s.Parts[1].Name != "a.pdf" || s.LastUserText != "look" {
			t.Errorf("summary = %+v", s)
		}
	}
}

func TestRecordGivesImageSizes(t *testing.T) {
	srv := llmtest.Start(t)
	photo := llmtest.Photo(64, 48)
	post(t, srv.URL+"/v1/messages", `{"model":"claude","max_tokens":10,"messages":[{"role":"user","content":[
		{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"`+base64.StdEncoding.EncodeToString(photo)+`"}}]}]}`)
	got, err := llmtest.Received(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if p := got[0].Parts[0]; p.Width != 64 || p.Height != 48 || len(p.SHA256) != 64 {
		t.Fatalf("part = %+v", p)
	}
}
