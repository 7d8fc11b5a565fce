package whatsapp

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/baton-agent/baton/internal/platform"
)

// MaxDownload and MaxUpload bound the files baton takes from and sends to
// WhatsApp: 100 MB. WhatsApp carries documents up to 2 GB, but a linked
// device downloads and decrypts a file whole before handing it on, and
// uploads it whole, so baton keeps to the size WhatsApp long had for
// documents.
const (
	MaxDownload = 100 << 20
	MaxUpload   = 100 << 20
)

// display is how people know the service, in refusals.
const display = "WhatsApp"

// Media is a file a message carries, as a Client hears it.
type Media struct {
	Kind      platform.AttachmentKind `json:"kind"`
	Name      string                  `json:"name,omitempty"`       // a document's file name
	MediaType string                  `json:"media_type,omitempty"` // the mimetype the sender's app claims
	Size      int64                   `json:"size,omitempty"`       // the fileLength the sender's app told
	// Hash is the hex SHA-256 of the file's bytes as the sender's app
	// told: the same file sent twice has the same.
	Hash string `json:"hash,omitempty"`
	// Ref is what the Client needs to download it (for whatsmeow: its
	// path on WhatsApp's media servers and its keys); only the Client that
	// made it reads it.
	Ref []byte `json:"ref,omitempty"`
}

// Upload describes a file a Client sends: a picture as an image message
// with Caption, anything else as a document with Name and Caption.
type Upload struct {
	Name      string `json:"name"`
	MediaType string `json:"media_type"`
	Size      int64  `json:"size"`
	Caption   string `json:"caption,omitempty"` // WhatsApp-formatted
	Image     bool   `json:"image,omitempty"`
	// Voice sends Ogg Opus as a voice message (PTT), the caption apart.
	Voice bool `json:"voice,omitempty"`
}

var (
	_ platform.DownloadLimiter = (*Adapter)(nil)
	_ platform.FileSender      = (*Adapter)(nil)
)

// MaxDownload is 100 MB (see the constant).
func (a *Adapter) MaxDownload() int64 { return MaxDownload }

// MaxUpload is 100 MB (see the constant).
func (a *Adapter) MaxUpload() int64 { return MaxUpload }

// attachments are m's files, each opened through the Client.
func (a *Adapter) attachments(m Message) []platform.Attachment {
	var out []platform.Attachment
	for _, f := range m.Files {
		label := f.Name
		if label == "" {
			label = "the " + string(f.Kind)
		}
		out = append(out, platform.Attachment{
			Kind: f.Kind, Name: f.Name, MediaType: f.MediaType, Size: f.Size, ID: f.Hash,
			Open: func(ctx context.Context) (io.ReadCloser, error) { return a.download(ctx, f, label) },
		})
	}
	return out
}

// download reads a file through the Client, which fetches it from
// WhatsApp's media servers by the message's own reference: never from a
// place a person named. One over MaxDownload is refused first.
func (a *Adapter) download(ctx context.Context, f Media, label string) (io.ReadCloser, error) {
	if err := platform.CheckDownload(display, label, f.Size, MaxDownload); err != nil {
		return nil, err
	}
	rc, err := a.client.Download(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("whatsapp: download %s: %w", label, classify(err, false))
	}
	return platform.LimitDownload(rc, display, label, MaxDownload), nil
}

// SendFile sends f as an image message (a picture, File.IsImage) or a
// document message (anything else, with its name), its caption rendered
// as WhatsApp formats text. A stored delivery's message takes its id
// from the key, as Send's do, so a try after a lost answer or a restart
// shows once.
func (a *Adapter) SendFile(ctx context.Context, to platform.Address, f platform.File) (string, error) {
	chat, err := a.chat(to)
	if err != nil {
		return "", err
	}
	if err := platform.CheckUpload(display, f, MaxUpload); err != nil {
		return "", err
	}
	body, err := f.Open(ctx)
	if err != nil {
		return "", fmt.Errorf("whatsapp: send %s: read it: %w", f.Name, err)
	}
	defer body.Close()
	up := Upload{Name: f.Name, MediaType: f.MediaType, Size: f.Size, Caption: Render(f.Caption), Image: f.IsImage(),
		Voice: f.Voice && strings.HasPrefix(f.MediaType, "audio/ogg")}
	id, err := a.client.SendFile(ctx, chat, MessageID(ctx, to, 0), up, body)
	if err != nil {
		return "", fmt.Errorf("whatsapp: send %s to %s: %w", f.Name, to.Key(), classify(err, false))
	}
	a.remember(id)
	return id, nil
}
