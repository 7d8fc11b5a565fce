package whatsapp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/baton-agent/baton/internal/platform"
)

// Section is the whatsapp: section of config.yaml.
type Section struct {
	// Enabled turns the adapter on; the device itself is linked with
	// `baton whatsapp link`.
	Enabled bool `yaml:"enabled"`
	// Home is a chat JID besides the owner's chat with themselves whose
	// messages are baton's (a group made for it, "120363…@g.us").
	Home string `yaml:"home"`
}

// Spec registers WhatsApp: enabled by `enabled: true` in the whatsapp:
// section once a device is linked.
func Spec() platform.Spec {
	// Personal: the device is linked to the owner's own account.
	return platform.Spec{Name: Name, Display: "WhatsApp", Personal: true, Open: open, CheckAddress: checkAddress, HomeForm: homeForm,
		Subcommands: []platform.Subcommand{linkCommand, unlinkCommand}}
}

var linkCommand = platform.Subcommand{
	Name:  "link",
	Short: "Pair baton as a linked device of your phone's WhatsApp (shows a QR code)",
	Long: `baton whatsapp link pairs baton as a linked device of your own WhatsApp
account, as WhatsApp Web does. It shows a QR code here; on your phone open
WhatsApp › Settings › Linked devices › Link a device and scan it (a new code
follows every 20 seconds or so until one is scanned).

The device is kept in baton's own database (state.db, or the configured
store). Afterwards set "whatsapp: enabled: true" in config.yaml, with your
own JID as the owner and home (the command prints the lines), and restart
the gateway. You then talk to baton in your chat with yourself; nothing
else on your account reaches it. Run it again if the phone logs the
device out; ` + "`baton whatsapp unlink`" + ` forgets a device to link another.`,
	Run: func(ctx context.Context, env platform.SubcommandEnv) error {
		return runProgram(ctx, env, "link")
	},
}

func open(ctx context.Context, s platform.Setup) (platform.Adapter, error) {
	var sec Section
	if err := s.DecodeSection(&sec); err != nil {
		return nil, err
	}
	if !sec.Enabled {
		return nil, platform.ErrNotConfigured
	}
	if sec.Home = strings.TrimSpace(sec.Home); sec.Home != "" && !strings.Contains(sec.Home, "@") {
		return nil, fmt.Errorf("whatsapp: home %q is not a chat JID (like 120363…@g.us)", sec.Home)
	}
	if s.StoreFile == "" {
		return nil, errNoStoreFile
	}
	prog, err := FindProgram()
	if err != nil {
		// The rest of the gateway runs; the warning says what to install.
		err = fmt.Errorf("%w: whatsapp is enabled, but %w", platform.ErrNotConfigured, err)
		if s.Log != nil {
			s.Log.Warn(err.Error())
		}
		return nil, err
	}
	client, err := StartProcess(ctx, []string{prog, "serve", "--store", s.StoreFile}, s.Log)
	if errors.Is(err, ErrNotLinked) {
		hint := LinkHint
		if s.Home != "" {
			if _, err := os.Stat(filepath.Join(s.Home, LegacyStoreFile)); err == nil {
				hint += fmt.Sprintf(" (the device is kept in baton's database now; %s holds one from before and can be deleted)", filepath.Join(s.Home, LegacyStoreFile))
			}
		}
		err := fmt.Errorf("%w: whatsapp is enabled but no device is linked: %s", platform.ErrNotConfigured, hint)
		if s.Log != nil {
			s.Log.Warn(err.Error())
		}
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	return New(Config{Client: client, Home: sec.Home, Logger: s.Log})
}

// errNoStoreFile is a store on a Postgres server: the bridge keeps its
// device in baton's SQLite file, and there is none.
var errNoStoreFile = errors.New("whatsapp: the device is kept in baton's SQLite store, and the configured store is on a Postgres server; " +
	"turn whatsapp off, or keep baton's store in a SQLite file")

// LegacyStoreFile is where the device was kept before it moved into
// baton's database; a device there has to be linked again.
const LegacyStoreFile = "whatsapp.db"

// runProgram runs `baton-whatsapp <verb> --store <baton's store>` in the
// terminal: linking shows its QR codes there.
func runProgram(ctx context.Context, env platform.SubcommandEnv, verb string) error {
	if env.StoreFile == "" {
		return errNoStoreFile
	}
	prog, err := FindProgram()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, prog, verb, "--store", env.StoreFile)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, env.Out, os.Stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return fmt.Errorf("whatsapp %s: %s said why above (%s)", verb, ProgramName, exit.ProcessState)
		}
		return fmt.Errorf("whatsapp %s: %w", verb, err)
	}
	return nil
}

var unlinkCommand = platform.Subcommand{
	Name:  "unlink",
	Short: "Forget the linked WhatsApp device (then remove it on the phone too)",
	Run: func(ctx context.Context, env platform.SubcommandEnv) error {
		return runProgram(ctx, env, "unlink")
	},
}

// ConfigFor is the config.yaml lines that enable the account jid.
func ConfigFor(jid string) string {
	return fmt.Sprintf("whatsapp:\n  enabled: true\ngateway:\n  owners:\n    whatsapp: [%q]\n  homes:\n    whatsapp: %q\n", jid, HomeAddress(jid).Key())
}
