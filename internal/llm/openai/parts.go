package openai

import (
	"strconv"

	oai "github.com/sashabaranov/go-openai"

	"github.com/baton-agent/baton/internal/llm"
	"github.com/baton-agent/baton/internal/llm/blob"
	"github.com/baton-agent/baton/internal/llm/imagefit"
)

// partTypeFile is the chat-completions content part for a file (a PDF),
// which the library has no type for: it is sent as a placeholder whose
// text is an index into the call's files, and the exchange writes the
// file in when it sends the request.
const partTypeFile oai.ChatMessagePartType = "file"

// filePart is a PDF to be sent as {"type":"file","file":{…}}; its data
// URL holds its bytes as a token of the call's blobs.
type filePart struct {
	Name string
	URL  string
}

// parts turns a user turn's llm.Parts into content parts for one request.
// Each image's and PDF's bytes are a token of blobs, streamed into the
// body when it is sent.
type parts struct {
	seesImages bool
	pdfFiles   bool
	files      []filePart
	blobs      *blob.Set
	fitted     *imagefit.Cache
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
		data, mediaType, err := pc.fitted.Fit(p.Data, llm.DefaultMaxImageSide)
		if err != nil {
			return describe
		}
		return oai.ChatMessagePart{Type: oai.ChatMessagePartTypeImageURL, ImageURL: &oai.ChatMessageImageURL{
			URL: pc.dataURL(mediaType, data),
		}}
	case llm.PartDocument:
		if !pc.pdfFiles || p.MediaType != "application/pdf" {
			return describe
		}
		pc.files = append(pc.files, filePart{Name: p.Name, URL: pc.dataURL("application/pdf", p.Data)})
		return oai.ChatMessagePart{Type: partTypeFile, Text: strconv.Itoa(len(pc.files) - 1)}
	default:
		if p.Text == "" {
			return describe
		}
		return oai.ChatMessagePart{Type: oai.ChatMessagePartTypeText, Text: p.Text}
	}
}

// dataURL is a data URL of data, its base64 a token of the call's blobs.
func (pc *parts) dataURL(mediaType string, data []byte) string {
	return "data:" + mediaType + ";base64," + pc.blobs.Token(data)
}
