package llmtest

import (
	"encoding/base64"
	"strings"
)

// Part is an image or document a request carried to the model, decoded
// from either protocol's shape: OpenAI's image_url and file parts,
// Anthropic's image and document blocks.
type Part struct {
	Role      string // of the message that carried it; "tool" inside an Anthropic tool result
	Kind      string // "image" or "document"
	MediaType string // as the request declared it
	Name      string // a document's filename (OpenAI) or title (Anthropic)
	Data      []byte // the bytes sent; nil if they were not valid base64
}

// Parts returns every image and document in the request's messages, in
// order.
func (r Request) Parts() []Part {
	var out []Part
	for _, m := range r.Messages() {
		mm, _ := m.(map[string]any)
		role, _ := mm["role"].(string)
		list, _ := mm["content"].([]any)
		for _, p := range list {
			pm, _ := p.(map[string]any)
			if part, ok := decodePart(pm); ok {
				part.Role = role
				out = append(out, part)
			}
			if pm["type"] == "tool_result" { // Anthropic: a tool's pictures ride in its result
				inner, _ := pm["content"].([]any)
				for _, q := range inner {
					qm, _ := q.(map[string]any)
					if part, ok := decodePart(qm); ok {
						part.Role = "tool"
						out = append(out, part)
					}
				}
			}
		}
	}
	return out
}

// Images returns the request's image parts.
func (r Request) Images() []Part {
	var out []Part
	for _, p := range r.Parts() {
		if p.Kind == "image" {
			out = append(out, p)
		}
	}
	return out
}

func decodePart(p map[string]any) (Part, bool) {
	str := func(m any, k string) string {
		mm, _ := m.(map[string]any)
		s, _ := mm[k].(string)
		return s
	}
	switch p["type"] {
	case "image_url": // OpenAI: {"image_url":{"url":"data:image/png;base64,…"}}
		mt, data := dataURL(str(p["image_url"], "url"))
		return Part{Kind: "image", MediaType: mt, Data: data}, true
	case "file": // OpenAI: {"file":{"filename":"a.pdf","file_data":"data:application/pdf;base64,…"}}
		mt, data := dataURL(str(p["file"], "file_data"))
		return Part{Kind: "document", MediaType: mt, Name: str(p["file"], "filename"), Data: data}, true
	case "image", "document": // Anthropic: {"source":{"type":"base64","media_type":…,"data":…}}
		kind, _ := p["type"].(string)
		data, err := base64.StdEncoding.DecodeString(str(p["source"], "data"))
		if err != nil {
			data = nil
		}
		title, _ := p["title"].(string)
		return Part{Kind: kind, MediaType: str(p["source"], "media_type"), Name: title, Data: data}, true
	}
	return Part{}, false
}

// dataURL splits "data:TYPE;base64,DATA".
func dataURL(u string) (string, []byte) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return "", nil
	}
	head, enc, ok := strings.Cut(rest, ",")
	if !ok {
		return "", nil
	}
	mt, isBase64 := strings.CutSuffix(head, ";base64")
	if !isBase64 {
		return mt, nil
	}
	data, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return mt, nil
	}
	return mt, data
}
