package whatsapp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"go.mau.fi/whatsmeow"
)

// ErrAlreadyLinked is returned by Link when the store holds a linked
// device already.
var ErrAlreadyLinked = errors.New("whatsapp: a device is linked already")

// Link pairs baton as a new linked device of the owner's phone: it calls
// show with each pairing code (a new one every 20 seconds or so, to be
// shown as a QR code) until the phone scanned one, keeps the device in
// the store at path, and returns the account's JID.
func Link(ctx context.Context, path string, log *slog.Logger, show func(code string)) (string, error) {
	dev, err := OpenDevice(ctx, path, log)
	if err != nil {
		return "", err
	}
	defer dev.Close()
	if dev.Linked() {
		return dev.JID(), fmt.Errorf("%w as %s: remove it on the phone (Linked devices) or delete %s to link again", ErrAlreadyLinked, dev.JID(), path)
	}
	cli := whatsmeow.NewClient(dev.store, waLogger(log, "link"))
	codes, err := cli.GetQRChannel(ctx)
	if err != nil {
		return "", fmt.Errorf("whatsapp: link: %w", err)
	}
	if err := cli.Connect(); err != nil {
		return "", fmt.Errorf("whatsapp: link: connect: %w", err)
	}
	defer cli.Disconnect()
	for item := range codes {
		switch item.Event {
		case whatsmeow.QRChannelEventCode:
			show(item.Code)
		case whatsmeow.QRChannelSuccess.Event:
			return dev.JID(), nil
		case whatsmeow.QRChannelTimeout.Event:
			return "", errors.New("whatsapp: link: no code was scanned in time; run it again")
		case whatsmeow.QRChannelEventError:
			return "", fmt.Errorf("whatsapp: link: %w", item.Error)
		default:
			return "", fmt.Errorf("whatsapp: link: %s", item.Event)
		}
	}
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	return "", errors.New("whatsapp: link: the pairing ended without a scan")
}
