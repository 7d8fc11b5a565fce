package device

import (
	"context"
	"errors"
	"io"
	"log/slog"

	"github.com/baton-agent/baton/internal/platform/whatsapp"
)

// Serve opens the device kept in baton's store at path and answers the
// adapter's frames on in and out (whatsapp.Serve) until in ends. A device
// that cannot be opened is said in the hello; one not linked says an
// empty Self, which the adapter takes as "link it first".
func Serve(ctx context.Context, path string, in io.Reader, out io.Writer, log *slog.Logger) error {
	dev, err := OpenDevice(ctx, path, log)
	if err != nil {
		return whatsapp.Serve(ctx, in, out, nil, err)
	}
	defer dev.Close()
	if !dev.Linked() {
		return whatsapp.Serve(ctx, in, out, unlinked{}, nil)
	}
	return whatsapp.Serve(ctx, in, out, NewWhatsmeow(dev, log), nil)
}

// unlinked is the Client of a store with no device in it.
type unlinked struct{}

var errUnlinked = errors.New("whatsapp: no device is linked: " + whatsapp.LinkHint)

func (unlinked) Self() string { return "" }
func (unlinked) Listen(context.Context, func(), func(context.Context, whatsapp.Message) error) error {
	return errUnlinked
}
func (unlinked) SendText(context.Context, string, string, string) (string, error) {
	return "", errUnlinked
}
func (unlinked) Composing(context.Context, string) error { return errUnlinked }
func (unlinked) Download(context.Context, whatsapp.Media) (io.ReadCloser, error) {
	return nil, errUnlinked
}
func (unlinked) SendFile(context.Context, string, string, whatsapp.Upload, io.Reader) (string, error) {
	return "", errUnlinked
}
