package openai

import (
	"encoding/base64"
	"strconv"

	oai "github.com/sashabaranov/go-openai"

	"github.com/baton-agent/baton/internal/llm"
	"github.com/baton-agent/baton/internal/llm/imagefit"
)

// partTypeFile is the chat-completions content part for a file (a PDF),
// which the library has no type for: it is sent as a placeholder whose
// text is an index into the call's files, and the exchange writes the
// file in when it sends the request.
const partTypeFile oai.ChatMessagePartType = "file"

// filePart is a PDF to be sent as {"type":"file","file":{…}}.
type filePart struct {
	Name string
	Data []byte
}

// parts turns a user turn's llm.Parts into content parts for one request.
type parts struct {
	seesImages bool
	pdfFiles   bool
	files      []filePart
}

// user is a user message: plain content, or content parts (the message's
// parts, then its text) when it carries any.
func (pc *parts) user(m llm.Message) oai.ChatCompletionMessage {
	if len(m.Parts) == 0 {
		return oai.ChatCompletionMessage{Role: oai.ChatMessageRoleUser, Content: m.Content}
	}
	content := make([]oai.ChatMessagePart, 0, len(m.Parts)+1)
	for _, p := range m.Parts {
		content = append(content, pc.part(p))
	}
	if m.Content != "" {
		content = append(content, oai.ChatMessagePart{Type: oai.ChatMessagePartTypeText, Text: m.Content})
	}
	return oai.ChatCompletionMessage{Role: oai.ChatMessageRoleUser, MultiContent: content}
}

func (pc *parts) part(p llm.Part) oai.ChatMessagePart {
	describe := oai.ChatMessagePart{Type: oai.ChatMessagePartTypeText, Text: p.Describe()}
	switch p.Kind {
	case llm.PartImage:
		if !pc.seesImages {
			return describe
		}
		data, mediaType, err := imagefit.Fit(p.Data, llm.DefaultMaxImageSide)
		if err != nil {
			return describe
		}
		return oai.ChatMessagePart{Type: oai.ChatMessagePartTypeImageURL, ImageURL: &oai.ChatMessageImageURL{
			URL: dataURL(mediaType, data),
		}}
	case llm.PartDocument:
		if !pc.pdfFiles || p.MediaType != "application/pdf" {
			return describe
		}
		pc.files = append(pc.files, filePart{Name: p.Name, Data: p.Data})
		return oai.ChatMessagePart{Type: partTypeFile, Text: strconv.Itoa(len(pc.files) - 1)}
	default:
		if p.Text == "" {
			return describe
		}
		return oai.ChatMessagePart{Type: oai.ChatMessagePartTypeText, Text: p.Text}
	}
}

func dataURL(mediaType string, data []byte) string {
	return "data:" + mediaType + ";base64," + base64.StdEncoding.EncodeToString(data)
}
