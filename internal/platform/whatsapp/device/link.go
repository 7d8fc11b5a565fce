package device

import (
	"context"
	"errors"
	"fmt"
	"github.com/baton-agent/baton/internal/platform/whatsapp"
	"io"
	"log/slog"

	"github.com/mdp/qrterminal/v3"
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
		return dev.JID(), fmt.Errorf("%w as %s: run `baton whatsapp unlink` first to link another", ErrAlreadyLinked, dev.JID())
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

// LinkInTerminal runs Link for baton's store at path, drawing each
// pairing code as a QR code on out, and then says what to put in
// config.yaml.
func LinkInTerminal(ctx context.Context, path string, out io.Writer, log *slog.Logger) error {
	fmt.Fprintln(out, "On your phone: WhatsApp › Settings › Linked devices › Link a device, then scan:")
	jid, err := Link(ctx, path, log, func(code string) { ShowCode(out, code) })
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nLinked as %s; the device is kept in %s.\n", jid, path)
	fmt.Fprintf(out, "Now, in config.yaml:\n\n%s\nand restart the gateway. Talk to baton in your chat with yourself.\n", whatsapp.ConfigFor(jid))
	return nil
}

// ShowCode draws a pairing code as a QR code, with the code's text below
// it for terminals that cannot show the blocks.
func ShowCode(out io.Writer, code string) {
	fmt.Fprintln(out)
	qrterminal.GenerateWithConfig(code, qrterminal.Config{
		Level: qrterminal.L, Writer: out, HalfBlocks: true,
		BlackChar: qrterminal.BLACK_BLACK, WhiteBlackChar: qrterminal.WHITE_BLACK,
		WhiteChar: qrterminal.WHITE_WHITE, BlackWhiteChar: qrterminal.BLACK_WHITE,
		QuietZone: 2,
	})
	fmt.Fprintf(out, "(code: %s — a new one follows if it expires)\n", code)
}

// Unlink forgets the linked device kept in baton's store at path and
// returns the account it was linked to ("" when none was). It does not
// reach WhatsApp: the phone still lists the device until it is removed
// there (Linked devices), which UnlinkInTerminal says.
func Unlink(ctx context.Context, path string, log *slog.Logger) (string, error) {
	dev, err := OpenDevice(ctx, path, log)
	if err != nil {
		return "", err
	}
	defer dev.Close()
	if !dev.Linked() {
		return "", nil
	}
	jid := dev.JID()
	if err := dev.store.Delete(ctx); err != nil {
		return "", fmt.Errorf("whatsapp: unlink %s: %w", jid, err)
	}
	return jid, nil
}

// UnlinkInTerminal runs Unlink and says what happened on out.
func UnlinkInTerminal(ctx context.Context, path string, out io.Writer, log *slog.Logger) error {
	jid, err := Unlink(ctx, path, log)
	if err != nil {
		return err
	}
	if jid == "" {
		fmt.Fprintln(out, "No WhatsApp device is linked; `baton whatsapp link` links one.")
		return nil
	}
	fmt.Fprintf(out, "baton forgot the device linked to %s. On the phone, remove it too: WhatsApp › Settings › Linked devices.\n", jid)
	return nil
}
